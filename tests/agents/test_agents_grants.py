"""Standing grants over agents' tool calls, in Telegram (real python-telegram-bot, local Bot API server) and Slack
(real slack-bolt, local Slack Web API), for every framework: "Always allow…" on a payment's card drafts a grant,
another person signs it on its own card, and from then on the same payment by the same person runs without a card,
exactly once, with the audit trail citing the grant. The kit never "always approves" on its own."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from milpa_chat.runtime.approval import pending_effects

from .chats import SURFACES, chat, until
from .frameworks import FRAMEWORKS, PAYMENT
from .payees import measured

pytestmark = pytest.mark.parametrize("framework", sorted(FRAMEWORKS))


def script_another_payment(c: Any) -> None:
    """The OpenAI-compatible server's model answers from a script: the second request's turns."""
    if getattr(c.driver, "fake", None) is not None:
        c.driver.fake.reply_tool_call("send_payment", dict(PAYMENT), id="call_pay_again").reply_text("Done.")


async def sign(c: Any, signer: str, *, not_by: str | None = None) -> str:
    """The grant's signature card is out; ``not_by`` (who drafted it, and may sign grants) is refused by
    four-eyes; ``signer`` signs it. Returns the grant's id."""
    (draft,) = [r for r in await c.grants.listing() if r.state == "draft"]
    card = await c.approvers_card("standing:sign")
    assert "ACME" in c.card_text(card) and c.context_of("alice").principal in c.card_text(card)
    if not_by is not None:
        await c.tap(card, "Approve", not_by)
        assert (await c.grants.get(draft.id)).state == "draft"
    await c.tap(card, "Approve", signer)
    for _ in range(1500):
        signed = await c.grants.get(draft.id)
        if signed.state != "draft":
            break
        await asyncio.sleep(0.01)
    assert signed.state == "in_force", signed
    assert signed.data["signed_by"]["principal"] == c.context_of(signer).principal
    return str(draft.id)


async def settled(c: Any, approval_id: str) -> None:
    """The agent's run is over (its answer posted) and everything the record owes (cards, the report) went out."""
    for _ in range(1500):
        record = await c.host.desk.get(approval_id)
        if not c.host._tasks and record.state == "executed" and not pending_effects(record.data):
            return
        await asyncio.sleep(0.01)
    raise TimeoutError(f"the run of {approval_id} did not settle: {record.state}, owes {pending_effects(record.data)}")


async def the_next_payment_is_lent(c: Any, framework: str, surface: str, grant_id: str, caplog: Any) -> None:
    """Alice asks again: no card, the tool runs once under the grant, the trail and the audit cite it."""
    await settled(c, c.ledger.paid[-1][2])
    cards, paid, said = c.cards_shown(), len(c.ledger.paid), len(c.alice_says())
    script_another_payment(c)
    with caplog.at_level(logging.INFO, logger="milpa_chat.audit"):
        await c.say()
        await until(lambda: len(c.ledger.paid) == paid + 1, "the lent payment")
        lent_id = c.ledger.paid[-1][2]
        for _ in range(1500):  # the run's result is recorded, then its trail entry, then the framework goes on
            story = await c.trail.story(lent_id)
            if story and story[-1].kind == "result":
                break
            await asyncio.sleep(0.01)
        await settled(c, lent_id)
    (answer,) = c.alice_says()[said:]  # Alice got the agent's answer: no card, no report
    assert answer.startswith("Done"), answer
    assert c.cards_shown() == cards  # nobody was shown a card
    lent = await c.host.desk.get(lent_id)
    assert lent is not None and lent.state == "executed" and lent.data["standing"]["grant"] == grant_id
    assert lent.data["decided_by"] == f"grant:{grant_id}" and lent.data["decided_via"] == "standing"
    assert [p[:2] for p in c.ledger.paid] == [("ACME", 120.0)] * (paid + 1)
    record = await c.grants.get(grant_id)
    assert record is not None and record.uses == 1
    kinds = [e.kind for e in story]
    assert kinds[:2] == ["requested", "decided"] and kinds.count("started") == 1 and kinds[-1] == "result", kinds
    decided = story[1].fields
    assert decided["grant"] == grant_id and decided["by"] == f"grant:{grant_id}", decided
    assert decided["receipts"] and decided["receipts"][0].startswith("payee:check@sha256:")
    assert (await c.trail.verify()).ok
    assert any(f"grant={grant_id}" in r.getMessage() and "[GrantAudit]" in r.getMessage() for r in caplog.records)
    print(f"\n{framework} on {surface}: the payment after the grant ran {kinds.count('started')} time(s), 0 cards")


@pytest.mark.parametrize("surface", SURFACES)
async def test_always_allow_on_the_approvers_card_drafts_a_grant_another_signs_and_the_next_call_is_lent(
    surface: str, framework: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with chat(surface, framework, tmp_path, grants=True) as c:
        await measured(c.host.registry, "ACME")
        card = await c.ask()
        assert any("Always allow" in b for b in c.buttons(card))
        mine = await c.requester_card()  # Alice does not decide this request: her copy offers no grant
        assert c.buttons(mine) == ["↩ Withdraw"]
        answer = await c.tap(card, "Always allow", "maria")
        assert surface == "slack" or "lends nothing until a person signs it" in answer, answer
        grant_id = await sign(c, "mateo", not_by="maria")
        assert c.ledger.paid == []  # signing the grant decided nothing about the call on the card
        await c.tap(card, "Approve", "maria")
        await c.alice_told("Paid 120.00 EUR to ACME.")
        first = await c.host.desk.get(c.ledger.paid[0][2])
        assert first is not None and first.data["decided_by"] == c.context_of("maria").principal
        assert "standing" not in first.data
        await the_next_payment_is_lent(c, framework, surface, grant_id, caplog)


async def test_the_requester_who_confirms_drafts_from_her_own_card(
    framework: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with chat("telegram", framework, tmp_path, verify=None, grants=True) as c:
        await measured(c.host.registry, "ACME")
        card = await c.ask(approvers=False)
        assert c.buttons(card)[-1] == "Always allow…", c.buttons(card)
        await c.tap(card, "Always allow", "alice")
        (draft,) = await c.grants.listing()
        assert draft.state == "draft" and draft.data["drafted_by"]["principal"] == c.context_of("alice").principal
        grant_id = await sign(c, "mateo")
        await c.tap(card, "Confirm", "alice")
        await c.alice_told("Paid 120.00 EUR to ACME.")
        await the_next_payment_is_lent(c, framework, "telegram", grant_id, caplog)

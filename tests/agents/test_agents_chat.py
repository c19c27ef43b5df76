"""Kit approvals for agents of four frameworks (pydantic-ai, the OpenAI Agents SDK, LangGraph, LangChain's
``create_agent`` with its human-in-the-loop middleware), in Telegram through the real python-telegram-bot against
the local Bot API server and in Slack through the real slack-bolt against the local Slack Web API: a person writes,
the framework's model proposes a payment, the card appears, people tap, and the tool runs once with exactly the
approved arguments (or the framework gets its own denial with the reason); the chat shows the card, then the
result."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from milpa_chat.runtime.approval import ApprovalRefused, digest
from milpa_chat.runtime.definition import VerifyPolicy

from .chats import SURFACES, chat, until
from .frameworks import FRAMEWORKS

pytestmark = [
    pytest.mark.parametrize("framework", sorted(FRAMEWORKS)),
    pytest.mark.parametrize("surface", SURFACES),
]


async def test_the_person_confirms_and_the_tool_runs_once_with_the_approved_arguments(
    surface: str, framework: str, tmp_path: Path
) -> None:
    async with chat(surface, framework, tmp_path, verify=None) as c:
        card = await c.ask(approvers=False)
        assert c.confirm_title in c.card_text(card) and "ACME" in c.card_text(card)
        approval = await c.only_approval()
        assert approval.data["requester"]["principal"] == c.context_of("alice").principal and c.ledger.paid == []
        assert "Confirmed" in await c.tap(card, "Confirm", "alice")
        await c.alice_told("Paid 120.00 EUR to ACME.")
        await c.alice_told("Done")
        done = await c.host.desk.get(approval.id)
        assert done is not None and done.state == "executed"
        assert c.ledger.paid == [("ACME", 120.0, approval.id)]  # once; the approval id is the idempotency key
        # what ran is what the card showed: the digest on the card is the digest of the arguments run
        assert done.data["digest"] == approval.data["digest"] == digest(done.args)
        assert c.ledger.paid[0][:2] == (done.args["to"], float(done.args["amount"]))
        # the card, then the tool's result, then the agent's answer
        await until(lambda: len(c.alice_says()) >= 3 and c.alice_says()[-1].startswith("Done"), "the agent's answer")
        said = c.alice_said_first()
        assert c.confirm_title in said[0] and "Paid 120.00" in said[1] and said[-1].startswith("Done"), said


async def test_an_approver_approves_and_four_eyes_keeps_the_requester_out(
    surface: str, framework: str, tmp_path: Path
) -> None:
    async with chat(surface, framework, tmp_path) as c:
        card = await c.ask()
        assert "send_payment" in c.card_text(card)
        assert "cannot approve" in await c.tap(card, "Approve", "alice")  # she may not approve (her own) request
        assert c.ledger.paid == []
        await c.tap(card, "Approve", "maria")
        await c.alice_told("Paid 120.00 EUR to ACME.")
        await until(lambda: "Paid 120.00" in c.card_text(card), "the result on the approvers' card")
        done = await c.only_approval()
        assert done.state == "executed" and done.data["decided_by"] == c.context_of("maria").principal
        assert [p[:2] for p in c.ledger.paid] == [("ACME", 120.0)]


async def test_a_rejection_with_a_reason_reaches_the_framework_as_its_denial(
    surface: str, framework: str, tmp_path: Path
) -> None:
    async with chat(surface, framework, tmp_path) as c:
        card = await c.ask()
        approval = await c.only_approval()
        await c.reject(approval.id, "maria", "over the monthly budget")
        await c.alice_told("rejected by Maria (over the monthly budget)")
        await until(lambda: "Rejected" in c.card_text(card), "the rejected card")
        assert not c.buttons(card)
        assert c.ledger.paid == []
        await until(
            lambda: any("Rejected by Maria: over the monthly budget." in s for s in c.driver.seen),
            "the framework's denial with the reason",
        )


async def test_an_approver_edits_the_amount_and_another_approves_the_edited_call(
    surface: str, framework: str, tmp_path: Path
) -> None:
    async with chat(surface, framework, tmp_path) as c:
        card = await c.ask()
        await c.edit(card, "maria", "amount", "plenty", "80")
        await until(lambda: "→ 80" in c.card_text(card), "the edited card")
        assert "You edited this version" in await c.tap(card, "Approve", "maria")
        await c.tap(card, "Approve", "mateo")
        await c.alice_told("Paid 80.00 EUR to ACME.")
        done = await c.only_approval()
        assert [p[:2] for p in c.ledger.paid] == [("ACME", 80.0)]
        assert done.args == {"to": "ACME", "amount": 80.0} and done.revision == 1
        assert done.data["digest"] == digest(done.args) != digest({"to": "ACME", "amount": 120})
        # the trail: the card showed the edited digest, and the run started with that digest and the approval id as key
        story = await c.trail.story(done.id)
        started = [e.fields for e in story if e.kind == "started"]
        assert [(f["args_digest"], f["key"]) for f in started] == [(done.data["digest"], done.id)]
        assert done.data["digest"] in {e.fields["args_digest"] for e in story if e.kind == "shown"}
        assert (await c.trail.verify()).ok


async def test_a_quorum_of_two_runs_the_call_after_the_second_approval(
    surface: str, framework: str, tmp_path: Path
) -> None:
    quorum = VerifyPolicy(approver_scopes=("payments:approve",), quorum=2)
    async with chat(surface, framework, tmp_path, verify=quorum) as c:
        card = await c.ask()
        assert "1 of 2" in await c.tap(card, "Approve", "maria")
        await asyncio.sleep(0.2)
        assert c.ledger.paid == []
        await c.tap(card, "Approve", "mateo")
        await c.alice_told("Paid 120.00 EUR to ACME.")
        done = await c.only_approval()
        voters = [c.context_of(who).principal for who in ("maria", "mateo")]
        assert len(c.ledger.paid) == 1 and [v["principal"] for v in done.votes] == voters


async def test_an_expired_request_runs_nothing_and_the_framework_is_told(
    surface: str, framework: str, tmp_path: Path
) -> None:
    short = VerifyPolicy(approver_scopes=("payments:approve",), expires_in=60)
    async with chat(surface, framework, tmp_path, verify=short) as c:
        card = await c.ask()
        c.clock.advance(61)
        await until(lambda: "Expired" in c.card_text(card), "the expired card")
        await until(lambda: any("expired" in s for s in c.driver.seen), "the denial")
        assert not c.buttons(card)
        assert c.ledger.paid == [] and (await c.only_approval()).state == "expired"
        assert any("expired" in s for s in c.driver.seen), c.driver.seen


async def test_twenty_concurrent_taps_run_the_call_once(surface: str, framework: str, tmp_path: Path) -> None:
    async with chat(surface, framework, tmp_path) as c:
        card = await c.ask()
        await c.taps(card, "Approve", 20)
        await c.alice_told("Paid 120.00 EUR to ACME.")
        await asyncio.sleep(0.3)
        print(f"\n{framework} on {surface}: 20 concurrent taps on Approve -> {len(c.ledger.paid)} run(s)")
        assert len(c.ledger.paid) == 1


async def test_the_frameworks_model_cannot_decide_its_own_approval(
    surface: str, framework: str, tmp_path: Path
) -> None:
    async with chat(surface, framework, tmp_path) as c:
        card = await c.ask()
        approval = await c.only_approval()
        model_ctx = approval.requester_context().as_model()
        manager_model = c.context_of("maria").as_model()  # even an approver's own model
        refused = 0
        for ctx, decision in ((model_ctx, "approve"), (manager_model, "approve"), (model_ctx, "cancel")):
            with pytest.raises(ApprovalRefused, match="A model cannot"):
                await c.host.desk.decide(approval.id, decision, ctx)
            refused += 1
        tool = await c.host.registry.call(
            "resolve_verification", {"request_id": approval.id, "decision": "grant"}, manager_model
        )
        refused += not tool.success
        print(f"\n{framework} on {surface}: {refused} model attempts to decide -> 0 lifted")
        assert refused == 4 and (await c.only_approval()).state == "pending" and c.ledger.paid == []
        await c.tap(card, "Approve", "maria")  # the person's tap still decides
        await c.alice_told("Paid 120.00 EUR to ACME.")


async def test_a_withdrawal_by_the_requester_reaches_the_framework_as_its_denial(
    surface: str, framework: str, tmp_path: Path
) -> None:
    async with chat(surface, framework, tmp_path) as c:
        await c.ask()
        mine = await c.requester_card()
        assert c.buttons(mine) == ["↩ Withdraw"]
        await c.tap(mine, "Withdraw", "alice")
        await until(lambda: any("Withdrawn by Alice" in s for s in c.driver.seen), "the framework's denial")
        approval = await c.only_approval()
        assert approval.state == "cancelled" and c.ledger.paid == []

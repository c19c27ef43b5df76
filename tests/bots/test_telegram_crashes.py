"""A real bot process (``python -m bots.telegram_assistant``) SIGKILLed at each named point of an approval.

Between the request, the first card, the decision, the start of the run, its end and the posting of its
result (``milpa_chat._failpoints``), the first process kills itself; a second one over the same SQLite file
takes over. Every time: at most one payment, nothing stuck — the record ends settled, or in
``effect_uncertain`` shown on the cards with Run again / Mark as done, which a person then uses.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from milpa_chat.runtime.approval import FINAL
from milpa_chat.store.sqlite import SqliteStore
from milpa_chat.testing import BotApiServer, TelegramMessage

from .telegram_support import ALICE, APPROVERS, IDENTITIES_TOML, MARIA, label
from .test_telegram_restart import bot_process, wait_for_cards

WAIT = 20.0


async def stored(db: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    store = SqliteStore(db)
    try:
        approvals = [{"id": r.key, **r.value} for r in await store.scan("approvals")]
        payments = [e.value for e in await store.read("payments")]
    finally:
        await store.close()
    return approvals, payments


def live_card(server: BotApiServer, with_label: str) -> TelegramMessage | None:
    """The newest approvers' card that offers ``with_label``."""
    for message in reversed(server.messages(APPROVERS)):
        if any(with_label in b for b in message.button_labels):
            return message
    return None


async def wait_for_card(server: BotApiServer, with_label: str) -> TelegramMessage:
    await server.wait_until(lambda: live_card(server, with_label) is not None, timeout=WAIT)
    card = live_card(server, with_label)
    assert card is not None
    return card


async def died(process: Any) -> None:
    assert await asyncio.wait_for(process.wait(), WAIT) == -signal.SIGKILL


@pytest.mark.parametrize(
    "point",
    [
        "approval.opened",
        "card.sent",
        "decision.claimed",
        "tool.started",
        "tool.returned",
        "run.finished",
        "report.sent",
    ],
)
async def test_a_kill_at_each_point_leaves_nothing_stuck_and_nothing_run_twice(tmp_path: Path, point: str) -> None:
    db, ids, log = tmp_path / "bot.db", tmp_path / "identities.toml", tmp_path / "bot.log"
    ids.write_text(IDENTITIES_TOML)
    async with BotApiServer() as server:
        server.group(APPROVERS, "Approvers", members=[ALICE, MARIA])
        env = {
            **os.environ,
            "TELEGRAM_TOKEN": server.token,
            "TELEGRAM_BASE_URL": server.base_url,
            "MILPA_STORE": str(db),
            "MILPA_IDENTITIES": str(ids),
            "MILPA_SWEEP_INTERVAL": "0.3",
            "MILPA_APPROVAL_LEASE": "2",
            "MILPA_APPROVAL_HANDOFF": "1",
        }
        during_request = point in ("approval.opened", "card.sent")
        async with bot_process(server, {**env, "MILPA_FAILPOINTS": point}, log) as first:
            await server.send_message(ALICE.id, ALICE, "/send_payment ACME 42")
            if not during_request:
                card = await wait_for_card(server, "Approve")
                await wait_for_cards(db, 2)  # the point is after the cards were recorded (card.sent covers before)
                await server.tap_button(card, label(card, "Approve"), MARIA)
            await died(first)
        after_kill, paid = await stored(db)
        assert len(paid) <= 1 and len(after_kill) == 1

        async with bot_process(server, env, log) as second:
            if during_request:  # the new process delivers the card the dead one never (fully) sent
                card = await wait_for_card(server, "Approve")
                await server.tap_button(card, label(card, "Approve"), MARIA)
            elif point in ("decision.claimed", "tool.started", "tool.returned"):
                # the run's lease ends without a result: a person is shown that and decides
                card = await wait_for_card(server, "Run again")
                assert "May not have run" in (card.text or "")
                choice = "Mark as done" if point == "tool.returned" else "Run again"
                await server.tap_button(card, label(card, choice), MARIA)
            if point == "card.sent":
                # the dead process sent a card whose id it never recorded: that copy keeps its buttons
                # until someone taps it, then it is answered from the record and brought up to date
                await server.wait_until(
                    lambda: "Done" in (server.message(APPROVERS, card.message_id).text or ""), timeout=WAIT
                )
                orphan = live_card(server, "Approve")
                assert orphan is not None and orphan.message_id < card.message_id
                tap = await server.tap_button(orphan, label(orphan, "Approve"), MARIA)
                await server.wait_until(lambda: server.callback_query(tap).answered, timeout=WAIT)
                assert server.callback_query(tap).answer_text == "Already done."
            await server.wait_until(
                lambda: live_card(server, "Approve") is None and live_card(server, "Run again") is None, timeout=WAIT
            )

            async def settled() -> bool:
                approvals, _ = await stored(db)
                a = approvals[0]
                return (
                    a["state"] in FINAL
                    and a.get("reported") is not None
                    and all(c.get("shown", "").startswith(a["state"]) for c in a["cards"])
                )

            for _ in range(100):
                if await settled():
                    break
                await asyncio.sleep(0.1)
            second.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(second.wait(), WAIT) == 0, log.read_text()[-3000:]

    approvals, paid = await stored(db)
    (approval,) = approvals
    assert paid == [{"to": "ACME", "amount": 42.0, "requested_by": "telegram:1001"}]  # exactly once
    assert approval["state"] == "executed" and await settled_cards(approval)
    results = [m for m in server.messages(ALICE.id) if "Paid 42.00" in (m.text or "") and not m.button_labels]
    assert len(results) >= 1 or point == "tool.returned"  # "Mark as done" settles without the tool's result
    print(
        f"killed at {point}: {len(paid)} payment, approval {approval['state']}, {len(approval['cards'])} cards "
        f"settled, {len(results)} result message(s)"
    )


async def settled_cards(approval: dict[str, Any]) -> bool:
    return all(c.get("message_id") and c.get("shown", "").startswith("executed") for c in approval["cards"])

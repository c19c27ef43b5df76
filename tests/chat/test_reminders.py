"""Reminders and escalation: a fresh copy of the card for the approvers at set times, the escalation
approvers after a while (and the requester told), once each across workers and restarts; expiry stays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from milpa_chat import ToolRegistry, VerifyPolicy, tool
from milpa_chat.chat import Assistant, Identities
from milpa_chat.errors import DeclarationError
from milpa_chat.testing import ManualClock
from milpa_chat.testing.transport import RecordingTransport

from .conftest import ALICE, APPROVERS_CHAT, IDENTITIES, MANAGER2, sqlite_store

ESCALATION_CHAT = "-700"


class Payments:
    def __init__(self) -> None:
        self.paid: list[float] = []

    @tool(
        "pay",
        "Send a payment",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(
            approver_scopes=("payments:approve",), expires_in=600, remind_after=(60, 120), escalate_after=300
        ),
    )
    async def pay(self, to: str, amount: float) -> dict[str, Any]:
        self.paid.append(amount)
        return {"paid": amount}


def make(store: Any, payments: Payments) -> tuple[Assistant, RecordingTransport]:
    registry = ToolRegistry(store=store)
    registry.scan(payments)
    identities = Identities.from_dict({**IDENTITIES, "escalation": {"telegram": [ESCALATION_CHAT]}})
    assistant = Assistant(registry, identities, approval_ttl=600)
    tg = RecordingTransport("telegram")
    assistant.attach(tg)
    return assistant, tg


async def test_reminders_then_escalation_once_each_across_a_restart(tmp_path: Path) -> None:
    clock, payments, db = ManualClock(), Payments(), tmp_path / "bot.db"
    first, tg = make(sqlite_store(db, clock), payments)
    await tg.say(first, ALICE, "/pay ACME 20")
    assert len(tg.in_chat(APPROVERS_CHAT)) == 1
    clock.now += 30
    assert await first.sweep() == 0  # nothing due yet
    clock.now += 31  # 61 s: the first reminder
    assert await first.sweep() == 1
    copies = tg.in_chat(APPROVERS_CHAT)
    assert len(copies) == 2 and {b.action for b in copies[-1].buttons} == {"approve", "reject"}
    assert await first.sweep() == 0  # reminded once
    await first.store.close()

    second, tg2 = make(sqlite_store(db, clock), payments)  # a restart (a new process on the same file)
    tg2.messages = tg.messages  # the same chats, as the platform keeps them
    assert await second.sweep() == 0
    clock.now += 60  # 121 s: the second reminder, by the new process, once
    assert await second.sweep() == 1 and len(tg2.in_chat(APPROVERS_CHAT)) == 3
    clock.now += 180  # 301 s: escalation
    assert await second.sweep() == 1
    escalated = tg2.last(ESCALATION_CHAT)
    assert {b.action for b in escalated.buttons} == {"approve", "reject"}
    assert "escalation approvers" in tg2.last(ALICE.id).text
    assert await second.sweep() == 0

    await tg2.tap(second, MANAGER2, escalated, "Approve")  # decided from the escalation chat
    assert payments.paid == [20.0]
    (approval,) = await second.approvals.listing()
    assert approval.state == "executed" and approval.effects() == [] and len(approval.data["cards"]) == 5
    for card in approval.data["cards"]:
        shown = tg2.find(card["chat_id"], card["message_id"])
        assert shown.buttons == () and "Done" in shown.text
    await second.store.close()


async def test_a_late_sweep_reminds_once_and_expiry_still_ends_it(tmp_path: Path) -> None:
    clock, payments = ManualClock(), Payments()
    assistant, tg = make(sqlite_store(tmp_path / "bot.db", clock), payments)
    await tg.say(assistant, ALICE, "/pay ACME 5")
    clock.now += 200  # both reminder times passed while no worker ran
    assert await assistant.sweep() == 1 and len(tg.in_chat(APPROVERS_CHAT)) == 2
    clock.now += 500
    assert await assistant.sweep() == 1  # expired (the escalation time also passed: expiry wins)
    (approval,) = await assistant.approvals.listing()
    assert approval.state == "expired" and payments.paid == []
    assert all(tg.find(c["chat_id"], c["message_id"]).buttons == () for c in approval.data["cards"])
    await assistant.store.close()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"remind_after": (700,)}, "before it expires"),
        ({"escalate_after": 0}, "after the request"),
        ({"remind_after": ("soon",)}, "take seconds"),
    ],
)
def test_reminder_times_are_checked_at_declaration(options: dict[str, Any], message: str) -> None:
    with pytest.raises(DeclarationError, match=message):
        VerifyPolicy(expires_in=600, **options)


async def test_the_sweeper_purges_what_has_expired(tmp_path: Path) -> None:
    import asyncio
    import sqlite3

    clock, payments, db = ManualClock(), Payments(), tmp_path / "bot.db"
    assistant, _ = make(sqlite_store(db, clock), payments)
    for i in range(5):
        await assistant.store.insert("deliveries", f"telegram:{i}", {"chat": "1"}, ttl=60)
    clock.now += 61
    sweeper = asyncio.ensure_future(assistant.run_sweeper(0.01, purge_every=0))
    for _ in range(200):
        conn = sqlite3.connect(db)
        (left,) = conn.execute("SELECT count(*) FROM milpa_records WHERE collection = 'deliveries'").fetchone()
        conn.close()
        if left == 0:
            break
        await asyncio.sleep(0.02)
    sweeper.cancel()
    assert left == 0
    await assistant.store.close()

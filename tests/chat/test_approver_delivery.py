"""Approvers reached where they are: the policy delivers to the approver chats, to each approver's direct
messages, or both; seeing a card never confers authority; when nobody can be reached, the requester is told."""

from __future__ import annotations

from typing import Any

from milpa_chat import ToolRegistry, VerifyPolicy, tool
from milpa_chat.chat import Assistant, Identities
from milpa_chat.store import MemoryStore
from milpa_chat.testing import ManualClock
from milpa_chat.testing.transport import RecordingTransport

from .conftest import ALICE, APPROVERS_CHAT, BOB, IDENTITIES, MANAGER, MANAGER2


class Payments:
    def __init__(self) -> None:
        self.paid: list[float] = []

    @tool(
        "pay_direct",
        "Send a payment (approvers asked in their direct messages)",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",), deliver="direct"),
    )
    async def pay_direct(self, amount: float) -> dict[str, Any]:
        self.paid.append(amount)
        return {"paid": amount}

    @tool(
        "pay_both",
        "Send a payment (approver chats and direct messages)",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",), deliver="both"),
    )
    async def pay_both(self, amount: float) -> dict[str, Any]:
        self.paid.append(amount)
        return {"paid": amount}


def make(identities: dict[str, Any]) -> tuple[Assistant, RecordingTransport, Payments]:
    payments = Payments()
    registry = ToolRegistry(store=MemoryStore(clock=ManualClock()))
    registry.scan(payments)
    assistant = Assistant(registry, Identities.from_dict(identities))
    tg = RecordingTransport("telegram")
    assistant.attach(tg)
    return assistant, tg, payments


async def test_direct_delivery_reaches_each_approver_and_a_decision_edits_every_copy() -> None:
    assistant, tg, payments = make(IDENTITIES)
    await tg.say(assistant, ALICE, "/pay_direct 7")
    maria, mateo = tg.last(MANAGER.id), tg.last(MANAGER2.id)  # their private chats with the bot
    assert {b.action for b in maria.buttons} == {"approve", "reject"} == {b.action for b in mateo.buttons}
    assert tg.in_chat(APPROVERS_CHAT) == [] and tg.in_chat(BOB.id) == []  # a writer is no approver
    await tg.tap(assistant, BOB, maria, "Approve")  # a forwarded card confers nothing
    assert payments.paid == [] and "payments:approve" in tg.answers_to(BOB)[-1]
    await tg.tap(assistant, MANAGER2, mateo, "Approve")
    assert payments.paid == [7.0]
    for card in (maria, mateo):
        assert card.buttons == () and "Done" in card.text and "Mateo" in card.text


async def test_both_reaches_the_chat_and_the_approvers() -> None:
    assistant, tg, _ = make(IDENTITIES)
    await tg.say(assistant, ALICE, "/pay_both 8")
    assert tg.in_chat(APPROVERS_CHAT) and tg.in_chat(MANAGER.id) and tg.in_chat(MANAGER2.id)


async def test_when_nobody_can_be_reached_the_requester_is_told() -> None:
    alone = {**IDENTITIES, "users": {"telegram:1001": ["writer"]}, "approvers": {}}
    assistant, tg, _ = make(alone)
    await tg.say(assistant, ALICE, "/pay_direct 9")
    texts = [m.text for m in tg.in_chat(ALICE.id)]
    assert any("No approver chat or approver is configured" in t for t in texts)
    assert any("Approve" in t for t in texts)  # an approver can still decide on the card in this chat

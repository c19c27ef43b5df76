"""The Bot API fails calls (5xx, 429 with retry_after) while approvals are decided: the state moves on at
once, the tool runs once, and the cards converge when the platform recovers. Unmodified python-telegram-bot."""

from __future__ import annotations

import asyncio

import pytest

from milpa_chat.chat import Approval, Assistant
from milpa_chat.store import MemoryStore
from milpa_chat.testing import ManualClock

from .telegram_support import ALICE, APPROVERS, MARIA, label, running_bot


async def settled(assistant: Assistant) -> Approval:
    """The only approval, once it owes nothing (the result post may still be on its way)."""
    for _ in range(100):
        (approval,) = await assistant.approvals.listing()
        if not approval.effects():
            return approval
        await asyncio.sleep(0.05)
    return approval


@pytest.mark.parametrize("failure", ["502", "429"])
async def test_a_failed_tap_answer_never_blocks_the_confirmed_run(failure: str) -> None:
    async with running_bot() as h:
        card = await h.say(ALICE, "/delete_note 2")
        if failure == "502":
            h.server.arm_error("answerCallbackQuery", 502, "Bad Gateway", times=5)
        else:  # longer than the transport waits for: it gives up on the answer, never on the run
            h.server.arm_flood_control(60, method="answerCallbackQuery", times=5)
        update = await h.server.tap_button(card, label(card, "Confirm"), ALICE)
        await h.server.wait_until(lambda: "Deleted note 2" in (h.current(card).text or ""), 15)
        assert h.runs == ["delete_note"] and h.current(card).button_labels == []
        approval = await settled(h.assistant)
        assert approval.state == "executed" and approval.effects() == []
        assert not h.server.callback_query(update).answered  # the platform never took the answer


async def test_cards_converge_after_edits_failed_for_a_while() -> None:
    clock = ManualClock()
    async with running_bot(store=MemoryStore(clock=clock), clock=clock) as h:
        await h.say(ALICE, "/send_payment ACME 30")
        group = await h.server.wait_for_message(APPROVERS)
        h.server.arm_error("editMessageText", 502, "Bad Gateway", times=4)
        tap = await h.tap(group, "Approve", MARIA)
        assert h.answer(tap) == "Approved — running it now."
        result = await h.server.wait_for_message(ALICE.id, since=tap)
        assert "Paid 30.00 EUR to ACME." in (result.text or "") and h.runs == ["send_payment"]
        (approval,) = await h.assistant.approvals.listing()
        assert approval.state == "executed" and approval.effects()  # the edits are owed, not lost
        for _ in range(6):  # the platform is back; each sweep delivers what is due
            clock.now += 120
            await h.assistant.sweep()
        (approval,) = await h.assistant.approvals.listing()
        assert approval.effects() == [] and approval.due is None
        for card in approval.data["cards"]:
            shown = h.server.message(int(card["chat_id"]), int(card["message_id"]))
            assert shown.button_labels == [] and "Approved by Maria via Telegram" in (shown.text or "")
        assert h.runs == ["send_payment"]

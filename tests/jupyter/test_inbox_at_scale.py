"""The notebook inbox's selection and actions next to a Telegram surface: three payments approved together from the
notebook run once each and edit their Telegram cards; a question and a comment show on the cards."""

from __future__ import annotations

from typing import Any

import pytest

from milpa_chat.chat import Assistant
from milpa_chat.runtime.approval import ApprovalRefused
from milpa_chat.testing import ManualClock
from milpa_chat.testing.transport import RecordingTransport

from .conftest import ANA, APPROVERS_CHAT, Tools
from .test_inbox import ask_to_pay, open_inbox


async def test_a_selection_approved_from_the_notebook_runs_each_once(
    assistant: Assistant, telegram: RecordingTransport, tools: Tools, clock: ManualClock, closing: list[Any]
) -> None:
    inbox = open_inbox(assistant, closing)
    cards = [await ask_to_pay(assistant, telegram, amount) for amount in (10, 20, 30)]
    ids = [c.buttons[0].ref for c in cards]
    clock.advance(60)
    outcomes = await inbox.actions.decide_all(ids, "approve", reason="invoices 7-9")
    assert [o.state for o in outcomes] == ["executed"] * 3
    assert sorted(tools.paid) == [("Luis", 10.0), ("Luis", 20.0), ("Luis", 30.0)]
    for card in cards:
        edited = telegram.find(APPROVERS_CHAT, card.message_id)
        assert "Approved by Maria via Jupyter (batch)" in edited.text and edited.buttons == ()
    again = await inbox.actions.decide_all(ids, "approve")
    assert all(o.refused for o in again) and len(tools.paid) == 3


async def test_ask_and_comment_from_the_notebook_show_on_the_card(
    assistant: Assistant, telegram: RecordingTransport, closing: list[Any]
) -> None:
    inbox = open_inbox(assistant, closing)
    card = await ask_to_pay(assistant, telegram)
    aid = card.buttons[0].ref
    assert "Asked Ana" in await inbox.actions.ask(aid, "which invoice?")
    assert "which invoice?" in telegram.last(ANA.id).text  # the question reached the requester's chat
    await inbox.actions.comment(aid, "budget ok")
    edited = telegram.find(APPROVERS_CHAT, card.message_id)
    assert "Maria asked: which invoice?" in edited.text and "Maria: budget ok" in edited.text
    with pytest.raises(ApprovalRefused, match="Only Ana"):
        await inbox.actions.answer(aid, "7")

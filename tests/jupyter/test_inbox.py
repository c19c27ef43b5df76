"""ApprovalInbox next to a Telegram surface: decisions made here edit the Telegram cards, and
decisions made in Telegram show up here."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from milpa_chat.chat import Assistant, Inbound
from milpa_chat.jupyter import ApprovalInbox
from milpa_chat.renderers import CliRenderer, Note
from milpa_chat.testing import ManualClock, eventually
from milpa_chat.testing.transport import RecordedMessage, RecordingTransport

from .conftest import ANA, APPROVERS_CHAT, BOB, Tools


async def ask_to_pay(assistant: Assistant, telegram: RecordingTransport, amount: int = 120) -> RecordedMessage:
    await telegram.say(assistant, ANA, f"/pay to=Luis amount={amount} api_key=sk-live-123")
    return telegram.last(APPROVERS_CHAT)


def open_inbox(assistant: Assistant, closing: list[Any], **options: Any) -> ApprovalInbox:
    options.setdefault("principal", "maria")
    options.setdefault("name", "Maria")
    options.setdefault("scopes", ["payments:approve"])
    inbox = ApprovalInbox(assistant, **options)
    closing.append(inbox)
    return inbox


async def test_a_telegram_request_waits_in_the_inbox(
    assistant: Assistant, telegram: RecordingTransport, closing: list[Any]
) -> None:
    inbox = open_inbox(assistant, closing)
    card = await ask_to_pay(assistant, telegram)
    await inbox.refresh()
    [item] = inbox.pending
    text = item.text
    assert "Approval needed: pay" in text and "Ana (telegram:1001)" in text
    assert "from Telegram (chat 1001)" in text and "expires in 10 min" in text
    assert '"amount": 120' in text and "sk-live-123" not in text and "REDACTED" in text
    assert item.approve_button.description == "✅ Approve" and not item.approve_button.disabled
    assert "Approval needed" in card.text


async def test_approving_here_runs_the_tool_once_and_edits_the_telegram_card(
    assistant: Assistant, telegram: RecordingTransport, tools: Tools, closing: list[Any]
) -> None:
    inbox = open_inbox(assistant, closing)
    card = await ask_to_pay(assistant, telegram)
    await inbox.refresh()
    item = inbox.item(card.buttons[0].ref)
    item.reason.value = "invoice 7 checked"
    approve = item.approve_button
    approve.click()
    approve.click()  # the second click is refused
    assert approve.disabled
    await inbox.idle()
    assert tools.paid == [("Luis", 120.0)]
    edited = telegram.find(APPROVERS_CHAT, card.message_id)
    assert "Approved by Maria via Jupyter" in edited.text and "Done: pay" in edited.text
    assert "Note: invoice 7 checked" in edited.text and edited.buttons == ()
    assert "Paid: 120" in telegram.last(ANA.id).text  # the result went back to the requester
    assert inbox.pending == [] and [i.id for i in inbox.decided] == [item.id]
    assert "Approved by Maria via Jupyter" in item.text and item.view.buttons == {}


async def test_rejecting_with_a_reason(
    assistant: Assistant, telegram: RecordingTransport, tools: Tools, closing: list[Any]
) -> None:
    inbox = open_inbox(assistant, closing)
    card = await ask_to_pay(assistant, telegram)
    await inbox.refresh()
    after = await inbox.reject(card.buttons[0].ref, reason="not in the budget")
    assert after is not None and after.state == "rejected" and tools.paid == []
    edited = telegram.find(APPROVERS_CHAT, card.message_id)
    assert "Rejected by Maria via Jupyter" in edited.text and "Note: not in the budget" in edited.text
    assert "rejected by Maria" in telegram.last(ANA.id).text
    assert "Rejected by Maria via Jupyter" in inbox.decided[0].text


async def test_a_decision_made_in_telegram_shows_up_by_itself(
    assistant: Assistant, telegram: RecordingTransport, tools: Tools, closing: list[Any]
) -> None:
    inbox = open_inbox(assistant, closing, refresh_every=0.05)
    card = await ask_to_pay(assistant, telegram)
    await eventually(lambda: bool(inbox.pending))  # no refresh() call: the inbox polls the store
    await telegram.tap(assistant, BOB, telegram.find(APPROVERS_CHAT, card.message_id), "Approve")
    await eventually(lambda: not inbox.pending)
    assert "Approved by Bob via Telegram" in inbox.decided[0].text
    assert tools.paid == [("Luis", 120.0)]


async def test_only_approvers_see_a_request_and_never_their_own(
    assistant: Assistant, telegram: RecordingTransport, closing: list[Any]
) -> None:
    await ask_to_pay(assistant, telegram)
    outsider = open_inbox(assistant, closing, principal="jupyter:olga", scopes=["notes:read"])
    await outsider.refresh()
    assert outsider.pending == [] and "Nothing waits for you" in outsider.pending_box.children[0].value
    ana = open_inbox(assistant, closing, principal="ana", name="Ana", scopes=["payments:send", "payments:approve"])
    maria = open_inbox(assistant, closing)
    await ana.refresh()
    assert len(ana.pending) == 1  # telegram:1001 asked: ana@jupyter may decide it
    own = Inbound("jupyter", "ana", ana.user, text="/pay to=Rosa amount=9")
    await assistant.handle(own, ana.transport)  # ana asks from the notebook herself
    await ana.refresh()
    await maria.refresh()
    assert len(ana.pending) == 1 and len(maria.pending) == 2  # four-eyes: not her own request
    mine = next(i for i in maria.pending if i.approval.requester_principal == "jupyter:ana")
    assert "from Jupyter (chat ana)" in mine.text
    last = ana.transport.messages[-1].message.blocks[-1]
    assert isinstance(last, Note) and "Waiting for an approver" in last.text


async def test_a_stale_view_is_told_who_decided_first(
    assistant: Assistant, telegram: RecordingTransport, tools: Tools, closing: list[Any]
) -> None:
    inbox = open_inbox(assistant, closing, refresh_every=60)
    card = await ask_to_pay(assistant, telegram)
    await inbox.refresh()
    item = inbox.pending[0]
    await telegram.tap(assistant, BOB, card, "Approve")  # Bob is faster, in Telegram
    item.approve_button.click()  # Maria still sees the old state
    await inbox.idle()
    assert inbox.transport.answers[item.id].startswith("Already")
    assert inbox.transport.answers[item.id] in item.text and tools.paid == [("Luis", 120.0)]
    assert "Approved by Bob via Telegram" in item.text and item.decided


async def test_a_refresh_by_hand_puts_the_next_automatic_one_off(
    assistant: Assistant, telegram: RecordingTransport, closing: list[Any]
) -> None:
    inbox = open_inbox(assistant, closing, refresh_every=0.5)
    await ask_to_pay(assistant, telegram)
    await inbox.refresh()
    reads: list[float] = []
    listing = inbox.desk.listing

    async def counted(**kwargs: Any) -> Any:
        reads.append(asyncio.get_running_loop().time())
        return await listing(**kwargs)

    inbox.desk.listing = counted  # type: ignore[method-assign]
    started = asyncio.get_running_loop().time()
    await asyncio.sleep(0.3)
    assert reads == []  # the store was read 0.3 s ago by hand: nothing to re-read yet
    await asyncio.sleep(0.5)
    assert reads and reads[0] - started >= 0.15  # then every refresh_every again


async def test_losing_the_scope_takes_requests_out_of_the_inbox(
    assistant: Assistant, telegram: RecordingTransport, closing: list[Any]
) -> None:
    inbox = open_inbox(assistant, closing)
    await ask_to_pay(assistant, telegram)
    await inbox.refresh()
    assert len(inbox.pending) == 1
    assistant.identities.users[inbox.principal] = ("notes:read",)
    await inbox.refresh()
    assert inbox.pending == [] and "notes:read" in inbox.header.value


async def test_overdue_requests_expire_and_their_cards_say_so(
    assistant: Assistant, telegram: RecordingTransport, clock: ManualClock, closing: list[Any]
) -> None:
    inbox = open_inbox(assistant, closing)
    card = await ask_to_pay(assistant, telegram)
    clock.now += 601
    await inbox.refresh()
    assert inbox.pending == [] and "Expired: pay" in inbox.decided[0].text
    assert "Nothing was done" in telegram.find(APPROVERS_CHAT, card.message_id).text


async def test_a_store_alone_gives_a_read_only_inbox(
    assistant: Assistant, telegram: RecordingTransport, closing: list[Any]
) -> None:
    await ask_to_pay(assistant, telegram)
    inbox = ApprovalInbox(assistant.store, principal="maria", scopes=["payments:approve"])
    closing.append(inbox)
    await inbox.refresh()
    [item] = inbox.pending
    assert "Read-only" in inbox.header.value and item.view.buttons == {}
    with pytest.raises(PermissionError, match="create it with the Assistant"):
        await inbox.approve(item.id)


def test_wrong_arguments_are_named() -> None:
    with pytest.raises(TypeError, match=r"Assistant \(to decide here\) or a Store"):
        ApprovalInbox("not an assistant")  # type: ignore[arg-type]


async def test_a_notebook_users_own_confirm_request_is_confirmed_in_their_inbox(
    assistant: Assistant, telegram: RecordingTransport, tools: Tools, closing: list[Any]
) -> None:
    inbox = open_inbox(assistant, closing, principal="dev", name="Dev", scopes=["notes:write"])
    await assistant.handle(Inbound("jupyter", "dev", inbox.user, text="/delete_note 4"), inbox.transport)
    await inbox.refresh()
    [item] = inbox.pending
    assert "Confirm: delete_note" in item.text and item.approve_button.description == "✅ Confirm"
    item.approve_button.click()
    await inbox.idle()
    assert tools.deleted == [4] and "Confirmed by Dev via Jupyter" in inbox.decided[0].text
    result = CliRenderer().render_message(inbox.transport.messages[-1].message)
    assert "Deleted: 4" in result  # the result was posted to the notebook user


async def test_a_run_that_did_not_report_back_waits_in_the_inbox_with_its_choice(
    assistant: Assistant, telegram: RecordingTransport, tools: Tools, clock: ManualClock, closing: list[Any]
) -> None:
    from milpa_chat.runtime import ToolContext

    inbox = open_inbox(assistant, closing)
    card = await ask_to_pay(assistant, telegram, 75)
    approval_id = card.buttons[0].ref
    maria = ToolContext("jupyter:maria", "jupyter", ("payments:approve",))
    change = await assistant.approvals.decide(approval_id, "approve", maria, follow=False)
    assert change.claimed  # ... and the worker that claimed the run died before it ran
    clock.now += 301
    await assistant.sweep()
    await inbox.refresh()
    [item] = inbox.pending
    assert "May not have run" in item.text and tools.paid == []
    labels = {b.description for b in item.view.buttons.values()}
    assert labels == {"🔁 Run again", "✔ Mark as done"}
    await inbox.approve(approval_id)  # Run again
    assert tools.paid == [("Luis", 75.0)] and inbox.pending == []
    assert "Done" in card.text and card.buttons == ()

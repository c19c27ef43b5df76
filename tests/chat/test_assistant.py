"""The Assistant end to end over an in-memory surface: commands, confirm/cancel, approvals, expiry, restart."""

from __future__ import annotations

import asyncio
from pathlib import Path

from milpa_chat.chat import Assistant, Identities
from milpa_chat.store import MemoryStore
from milpa_chat.testing import ManualClock
from milpa_chat.testing.transport import RecordingTransport

from .conftest import (
    ALICE,
    APPROVERS_CHAT,
    BOB,
    IDENTITIES,
    MANAGER,
    MANAGER2,
    STRANGER,
    Tools,
    make_assistant,
    sqlite_store,
)


async def test_help_and_tools_list_only_what_the_user_may_call(assistant: Assistant, tg: RecordingTransport) -> None:
    await tg.say(assistant, ALICE, "/start")
    assert "/tools" in tg.last(ALICE.id).text
    await tg.say(assistant, MANAGER, "/tools")
    text = tg.last(MANAGER.id).text
    assert "/list_notes" in text and "/delete_note" not in text
    await tg.say(assistant, STRANGER, "/tools")
    assert "no tools available" in tg.last(STRANGER.id).text


async def test_free_text_without_an_agent_explains_commands(assistant: Assistant, tg: RecordingTransport) -> None:
    await tg.say(assistant, ALICE, "hello there")
    assert "/tools" in tg.last(ALICE.id).text


async def test_command_arguments_positional_named_and_json(assistant: Assistant, tg: RecordingTransport) -> None:
    await tg.say(assistant, ALICE, '/search_notes "milk and eggs" page=2 tags=a,b')
    assert '"page": 2' in tg.last(ALICE.id).text or "page: 2" in tg.last(ALICE.id).text.lower()
    await tg.say(assistant, ALICE, '/search_notes {"query": "x", "tags": ["t"]}')
    assert "x" in tg.last(ALICE.id).text


async def test_bad_arguments_get_a_clear_error(assistant: Assistant, tg: RecordingTransport, tools: Tools) -> None:
    await tg.say(assistant, ALICE, "/delete_note five")
    text = tg.last(ALICE.id).text
    assert "note_id" in text and tools.deleted == []
    await tg.say(assistant, ALICE, '/search_notes "unclosed')
    assert "close every quote" in tg.last(ALICE.id).text
    await tg.say(assistant, ALICE, "/delete_not 5")
    assert "Did you mean /delete_note" in tg.last(ALICE.id).text


async def test_denied_user_is_told_which_scope_is_missing(assistant: Assistant, tg: RecordingTransport) -> None:
    await tg.say(assistant, STRANGER, "/delete_note 3")
    assert "notes:write" in tg.last(STRANGER.id).text


async def test_confirm_runs_once_for_the_requester(assistant: Assistant, tg: RecordingTransport, tools: Tools) -> None:
    await tg.say(assistant, ALICE, "/delete_note 5")
    card = tg.last(ALICE.id)
    assert {b.action for b in card.buttons} >= {"confirm", "cancel"} and tools.deleted == []
    await tg.tap(assistant, BOB, card, "Confirm")
    assert tools.deleted == [] and "Only Alice can confirm" in tg.answers_to(BOB)[-1]
    await tg.tap(assistant, ALICE, card, "Confirm")
    assert tools.deleted == [5]
    assert card.buttons == () and "Alice" in card.text
    assert "deleted" in tg.last(ALICE.id).text.lower()
    await tg.tap(assistant, ALICE, card.__class__(card.chat_id, card.message_id, card.history[0]), "Confirm")
    assert tools.deleted == [5] and "Already" in tg.answers_to(ALICE)[-1]


async def test_cancel(assistant: Assistant, tg: RecordingTransport, tools: Tools) -> None:
    await tg.say(assistant, ALICE, "/delete_note 6")
    card = tg.last(ALICE.id)
    await tg.tap(assistant, ALICE, card, "Cancel")
    assert tools.deleted == [] and card.buttons == () and "cancel" in card.text.lower()


async def test_fifty_concurrent_taps_run_the_tool_once(
    assistant: Assistant, tg: RecordingTransport, tools: Tools
) -> None:
    await tg.say(assistant, ALICE, "/delete_note 7")
    card = tg.last(ALICE.id)
    pending = card.message
    snapshot = card.__class__(card.chat_id, card.message_id, pending)
    await asyncio.gather(*[tg.tap(assistant, ALICE, snapshot, "Confirm") for _ in range(50)])
    assert tools.deleted == [7]


async def test_redelivered_update_is_ignored(assistant: Assistant, tg: RecordingTransport, tools: Tools) -> None:
    await tg.say(assistant, ALICE, "/delete_note 8")
    card = tg.last(ALICE.id)
    snapshot = card.__class__(card.chat_id, card.message_id, card.message)
    await tg.tap(assistant, ALICE, snapshot, "Cancel", delivery_id="u-77")
    answers = len(tg.answers)
    await tg.tap(assistant, ALICE, snapshot, "Confirm", delivery_id="u-77")
    assert len(tg.answers) == answers and tools.deleted == []


async def test_forged_button_data_is_refused(assistant: Assistant, tg: RecordingTransport, tools: Tools) -> None:
    await tg.say(assistant, ALICE, "/delete_note 9")
    inbound = tg.inbound(ALICE, ALICE.id, action="confirm", ref="not-a-real-approval-id")
    await assistant.handle(inbound, tg)
    assert "not valid" in tg.answers_to(ALICE)[-1] and tools.deleted == []
    card = tg.last(ALICE.id)
    wrong_kind = tg.inbound(ALICE, ALICE.id, action="approve", ref=card.buttons[0].ref)
    await assistant.handle(wrong_kind, tg)
    assert "not valid" in tg.answers_to(ALICE)[-1] and tools.deleted == []


async def test_verification_four_eyes_then_approver_runs_it(
    assistant: Assistant, tg: RecordingTransport, tools: Tools
) -> None:
    await tg.say(assistant, ALICE, "/pay ACME 120.5")
    mine = tg.last(ALICE.id)
    group = tg.last(APPROVERS_CHAT)
    # the requester's copy offers Withdraw only; the approvers' copy Approve / Reject
    assert [b.action for b in mine.buttons] == ["cancel"] and {"approve", "reject"} <= {b.action for b in group.buttons}
    assert "ACME" in group.text and tools.paid == []
    await tg.tap(assistant, ALICE, group, "Approve")
    assert "four-eyes" in tg.answers_to(ALICE)[-1] or "payments:approve" in tg.answers_to(ALICE)[-1]
    await tg.tap(assistant, BOB, group, "Approve")
    assert tools.paid == []
    await tg.tap(assistant, MANAGER, group, "Approve")
    assert tools.paid == [("ACME", 120.5)]
    assert group.buttons == () and "Maria" in group.text and "Maria" in mine.text
    assert "paid" in tg.last(ALICE.id).text.lower()


async def test_reject_tells_the_requester(assistant: Assistant, tg: RecordingTransport, tools: Tools) -> None:
    await tg.say(assistant, ALICE, "/pay ACME 10")
    group = tg.last(APPROVERS_CHAT)
    await tg.tap(assistant, MANAGER, group, "Reject")
    assert tools.paid == [] and group.buttons == ()
    assert "rejected by Maria" in tg.last(ALICE.id).text


async def test_quorum_of_two(assistant: Assistant, tg: RecordingTransport, tools: Tools) -> None:
    await tg.say(assistant, ALICE, "/big_pay ACME 5000")
    group = tg.last(APPROVERS_CHAT)
    snapshot = group.__class__(group.chat_id, group.message_id, group.message)
    await tg.tap(assistant, MANAGER, group, "Approve")
    assert tools.paid == [] and "1 of 2" in tg.answers_to(MANAGER)[-1]
    await tg.tap(assistant, MANAGER, snapshot, "Approve")
    assert tools.paid == []
    await tg.tap(assistant, MANAGER2, snapshot, "Approve")
    assert tools.paid == [("ACME", 5000.0)]


async def test_two_approvers_at_the_same_moment_run_it_once(
    assistant: Assistant, tg: RecordingTransport, tools: Tools
) -> None:
    await tg.say(assistant, ALICE, "/pay ACME 1")
    group = tg.last(APPROVERS_CHAT)
    snap = group.__class__(group.chat_id, group.message_id, group.message)
    await asyncio.gather(*[tg.tap(assistant, m, snap, "Approve") for m in (MANAGER, MANAGER2) * 10])
    assert tools.paid == [("ACME", 1.0)]


async def test_expiry_edits_the_cards_and_refuses_late_taps(
    assistant: Assistant, tg: RecordingTransport, tools: Tools, clock: ManualClock
) -> None:
    await tg.say(assistant, ALICE, "/pay ACME 3")
    group = tg.last(APPROVERS_CHAT)
    snap = group.__class__(group.chat_id, group.message_id, group.message)
    clock.now += 601
    assert await assistant.sweep() == 1
    assert group.buttons == () and "xpired" in group.text
    assert "expired; nothing was done" in tg.last(ALICE.id).text
    await tg.tap(assistant, MANAGER, snap, "Approve")
    assert tools.paid == [] and "expired" in tg.answers_to(MANAGER)[-1]


async def test_pagination_buttons_edit_in_place(assistant: Assistant, tg: RecordingTransport) -> None:
    await tg.say(assistant, ALICE, "/list_notes")
    page1 = tg.last(ALICE.id)
    assert "note 1" in page1.text and "note 11" not in page1.text
    await tg.tap(assistant, ALICE, page1, "Next")
    assert "note 11" in page1.text and len(tg.in_chat(ALICE.id)) == 1
    await tg.tap(assistant, BOB, page1, "Next")
    assert "Only the person who ran this" in tg.answers_to(BOB)[-1]


async def test_restart_between_request_and_decision(tools: Tools, clock: ManualClock, tmp_path: Path) -> None:
    db = tmp_path / "bot.db"
    first = make_assistant(tools, sqlite_store(db, clock))
    tg1 = RecordingTransport("telegram")
    first.attach(tg1)
    await tg1.say(first, ALICE, "/pay ACME 42")
    card = tg1.last(APPROVERS_CHAT)
    await first.store.close()
    # a new process: new registry, new assistant, same SQLite file, same chat messages
    second = make_assistant(tools, sqlite_store(db, clock))
    tg1_again = tg1
    second.attach(tg1_again)
    await tg1_again.tap(second, MANAGER, card, "Approve")
    assert tools.paid == [("ACME", 42.0)] and card.buttons == ()
    await second.store.close()


async def test_cross_surface_approval(tools: Tools, clock: ManualClock) -> None:
    identities = {**IDENTITIES, "approvers": {"telegram": [APPROVERS_CHAT], "slack": ["C-APPROVE"]}}
    assistant = make_assistant(tools, MemoryStore(clock=clock), identities)
    tg, slack = RecordingTransport("telegram"), RecordingTransport("slack")
    assistant.attach(tg)
    assistant.attach(slack)
    await tg.say(assistant, ALICE, "/pay ACME 7")
    tg_card, slack_card = tg.last(APPROVERS_CHAT), slack.last("C-APPROVE")
    from milpa_chat.chat import ChatUser

    slack_manager = ChatUser("U2001", "Maria (Slack)", team="T1")
    await slack.tap(assistant, slack_manager, slack_card, "Approve")
    assert tools.paid == [("ACME", 7.0)]
    assert tg_card.buttons == () and slack_card.buttons == () and "Maria (Slack)" in tg_card.text


def test_identities_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "ids.toml"
    path.write_text('[roles]\nw = ["a", "b"]\n[users]\n"telegram:1" = ["w", "c"]\n[approvers]\ntelegram = [-5]\n')
    ids = Identities.from_toml(path)
    from milpa_chat.chat import ChatUser

    assert ids.scopes_for("telegram", ChatUser("1")) == ("a", "b", "c")
    assert ids.scopes_for("telegram", ChatUser("2")) == ()
    assert ids.approver_chats("telegram") == ("-5",)
    bad = tmp_path / "bad.toml"
    bad.write_text("[staff]\n")  # [people] is a section now (MCP callers -> chat users)
    import pytest

    with pytest.raises(ValueError, match="unknown identity section"):
        Identities.from_toml(bad)


async def test_a_reason_given_with_a_decision_reaches_the_card_and_the_verifier(
    assistant: Assistant, tg: RecordingTransport, tools: Tools
) -> None:
    await tg.say(assistant, ALICE, "/pay ACME 99")
    group = tg.last(APPROVERS_CHAT)
    button = group.button("Reject")
    inbound = tg.inbound(
        MANAGER,
        APPROVERS_CHAT,
        action=button.action,
        ref=button.ref,
        message_id=group.message_id,
        note="Invoice missing",
    )
    await assistant.handle(inbound, tg)
    assert tools.paid == [] and "Invoice missing" in group.text
    approval = await assistant.approvals.get(button.ref)
    assert approval is not None
    stored = await assistant.registry.verifier.get(approval.id)
    assert stored is not None and stored.value["decision_note"] == "Invoice missing"


async def test_texts_use_the_surfaces_command_spelling(assistant: Assistant) -> None:
    from milpa_chat.chat import Traits

    slack = RecordingTransport("slack")
    slack._traits = Traits(command_prefix="/milpa ")  # a Slack slash command's spelling
    assistant.attach(slack)
    from milpa_chat.chat import ChatUser

    maria = ChatUser("U2001", "Maria", team="T1")
    await slack.say(assistant, maria, "/tools")
    assert "/milpa list_notes" in slack.last(maria.id).text
    await slack.say(assistant, maria, "/delete_not 5")
    assert "Did you mean /milpa delete_note" in slack.last(maria.id).text


async def test_a_tool_that_answers_at_once_shows_no_typing(
    assistant: Assistant, tg: RecordingTransport, tools: Tools
) -> None:
    await tg.say(assistant, ALICE, "/list_notes")
    await tg.say(assistant, ALICE, "/delete_note 4")
    await tg.tap(assistant, ALICE, tg.last(ALICE.id), "Confirm")
    assert tools.deleted == [4] and tg.typing_chats == []


async def test_typing_is_shown_while_an_approved_tool_runs(
    assistant: Assistant, tg: RecordingTransport, tools: Tools
) -> None:
    assistant.typing_after = 0  # at once: these tools answer within a millisecond
    await tg.say(assistant, ALICE, "/pay ACME 2")
    before = tg.typing_chats.count(ALICE.id)
    await tg.tap(assistant, MANAGER, tg.last(APPROVERS_CHAT), "Approve")
    assert tools.paid == [("ACME", 2.0)] and tg.typing_chats.count(ALICE.id) > before
    await tg.say(assistant, ALICE, "/delete_note 4")
    before = tg.typing_chats.count(ALICE.id)
    await tg.tap(assistant, ALICE, tg.last(ALICE.id), "Confirm")
    assert tools.deleted == [4] and tg.typing_chats.count(ALICE.id) > before


class FlakySurface(RecordingTransport):
    """A surface whose first send fails (a platform error, or a crash before the id was recorded)."""

    def __init__(self, surface: str) -> None:
        super().__init__(surface)
        self.failures = 1

    async def send(self, chat_id: str, message):
        if self.failures:
            self.failures -= 1
            raise ConnectionError("platform unavailable")
        return await super().send(chat_id, message)


async def test_a_card_whose_send_failed_gets_the_outcome_once_decided(tools: Tools, clock: ManualClock) -> None:
    identities = {**IDENTITIES, "approvers": {"telegram": [APPROVERS_CHAT], "slack": ["C-APPROVE"]}}
    assistant = make_assistant(tools, MemoryStore(clock=clock), identities)
    tg, slack = RecordingTransport("telegram"), FlakySurface("slack")
    assistant.attach(tg)
    assistant.attach(slack)
    await tg.say(assistant, ALICE, "/pay ACME 11")
    assert slack.in_chat("C-APPROVE") == []
    card = tg.last(APPROVERS_CHAT)
    approval = await assistant.approvals.get(card.button("Approve").ref)
    assert approval is not None
    assert {(m["surface"], m["message_id"] is None) for m in approval.data["cards"]} >= {("slack", True)}
    await tg.tap(assistant, MANAGER, card, "Approve")
    assert tools.paid == [("ACME", 11.0)]
    late = slack.last("C-APPROVE")
    assert late.buttons == () and "Maria" in late.text

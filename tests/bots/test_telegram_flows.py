"""TelegramBot end to end: unmodified PTB polling BotApiServer, the full Assistant, the example tools."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from milpa_chat.chat import cards
from milpa_chat.store.sqlite import SqliteStore
from milpa_chat.testing import ManualClock

from .telegram_support import ALICE, APPROVERS, BOB, EVE, MARIA, WAIT, label, running_bot


async def test_commands_with_bad_arguments_get_a_clear_error() -> None:
    async with running_bot() as h:
        reply = await h.say(ALICE, "/delete_note five")
        assert "note_id" in (reply.text or "") and "valid integer" in (reply.text or "")
        reply = await h.say(ALICE, '/search_notes "milk')
        assert "close every quote" in (reply.text or "") and "Usage: /search_notes <query>" in (reply.text or "")
        reply = await h.say(ALICE, "/delete_not 5")
        assert "Did you mean /delete_note" in (reply.text or "")
        reply = await h.say(EVE, "/delete_note 5")
        assert "notes:write" in (reply.text or "")
        assert h.runs == []


async def test_confirm_by_the_requester_runs_once_and_edits_the_card() -> None:
    async with running_bot() as h:
        card = await h.say(ALICE, "/delete_note 3")
        assert "Confirm: delete_note" in (card.text or "") and len(card.button_labels) == 2
        confirm = card.button(label(card, "Confirm"))["callback_data"]

        # another user's tap (e.g. a forwarded card) is refused and changes nothing
        assert await h.tap_data(card, confirm, BOB) == "Only Alice can confirm this."
        assert h.server.callback_queries[-1].show_alert
        assert h.runs == [] and h.current(card).button_labels == card.button_labels

        tap = await h.tap(card, "Confirm", ALICE)
        assert h.answer(tap) == "Confirmed — running it now."
        result = await h.server.wait_for_message(ALICE.id, since=tap)
        assert "Deleted note 3: Quarterly report due on Friday" in (result.text or "")
        await h.server.wait_until(lambda: "Deleted note 3" in (h.current(card).text or ""))
        edited = h.current(card)
        assert edited.button_labels == [] and "Confirmed by Alice via Telegram" in (edited.text or "")
        assert h.runs == ["delete_note"]

        assert await h.tap_data(card, confirm, ALICE) == "Already done."  # from a stale copy of the card
        assert h.runs == ["delete_note"]
        h.assert_every_tap_answered_once()


async def test_cancel_does_nothing_and_says_so() -> None:
    async with running_bot() as h:
        card = await h.say(ALICE, "/delete_note 2")
        tap = await h.tap(card, "Cancel", ALICE)
        assert h.answer(tap) == "Cancelled — nothing was done."
        await h.server.wait_until(lambda: h.current(card).button_labels == [])
        assert "Cancelled by Alice" in (h.current(card).text or "")
        listing = await h.say(ALICE, "/list_notes")
        assert "Call the plumber" in (listing.text or "") and h.runs == ["list_notes"]
        h.assert_every_tap_answered_once()


async def test_fifty_concurrent_taps_run_the_tool_once() -> None:
    async with running_bot() as h:
        card = await h.say(ALICE, "/delete_note 7")
        data = card.button(label(card, "Confirm"))["callback_data"]
        taps = await asyncio.gather(*(h.server.tap(ALICE.id, card.message_id, ALICE, data) for _ in range(50)))
        await h.server.wait_until(lambda: all(h.server.callback_query(t).answered for t in taps), timeout=10)

        def results() -> list[str]:
            return [
                m.text or ""
                for m in h.server.messages(ALICE.id)
                if m.message_id != card.message_id and "Deleted note 7" in (m.text or "")
            ]

        await h.server.wait_until(results)
        answers = sorted(h.answer(t) for t in taps)
        assert answers.count("Confirmed — running it now.") == 1
        assert set(answers) <= {"Confirmed — running it now.", "Already approved and running.", "Already done."}
        assert h.runs == ["delete_note"]
        assert len(results()) == 1
        h.assert_every_tap_answered_once()


async def test_verification_card_in_the_approvers_group_with_four_eyes() -> None:
    async with running_bot() as h:
        mine = await h.say(BOB, "/send_payment ACME 120.5")
        group = await h.server.wait_for_message(APPROVERS)
        assert mine.button_labels == ["↩ Withdraw"] and "Waiting for an approver" in (mine.text or "")
        assert "Approval needed: send_payment" in (group.text or "") and '"to": "ACME"' in (group.text or "")
        assert [label(group, "Approve"), label(group, "Reject")] == group.button_labels

        own = await h.tap(group, "Approve", BOB)
        assert "your own request (four-eyes rule)" in h.answer(own)
        unqualified = await h.tap(group, "Approve", ALICE)
        assert "payments:approve" in h.answer(unqualified)
        assert await h.store.read("payments") == [] and h.runs == []

        approved = await h.tap(group, "Approve", MARIA)
        assert h.answer(approved) == "Approved — running it now."
        result = await h.server.wait_for_message(BOB.id, since=approved)
        assert "Paid 120.50 EUR to ACME." in (result.text or "")
        await h.server.wait_until(lambda: "Paid 120.50" in (h.current(group).text or ""))
        for card in (h.current(group), h.current(mine)):
            assert card.button_labels == [] and "Approved by Maria via Telegram" in (card.text or "")
            assert "Outcome: Paid 120.50 EUR to ACME." in (card.text or "")
        assert [e.value["amount"] for e in await h.store.read("payments")] == [120.5]
        assert h.runs == ["send_payment"]
        h.assert_every_tap_answered_once()


async def test_reject_tells_the_requester() -> None:
    async with running_bot() as h:
        await h.say(ALICE, "/send_payment ACME 10")
        group = await h.server.wait_for_message(APPROVERS)
        tap = await h.tap(group, "Reject", MARIA)
        assert h.answer(tap) == "Rejected — nothing was done."
        told = await h.server.wait_for_message(ALICE.id, since=tap)
        assert told.text == "Your request to run send_payment was rejected by Maria. Nothing was done."
        assert h.current(group).button_labels == [] and "Rejected by Maria" in (h.current(group).text or "")
        assert await h.store.read("payments") == [] and h.runs == []
        h.assert_every_tap_answered_once()


async def test_expired_requests_are_edited_and_late_taps_refused() -> None:
    clock = ManualClock()
    async with running_bot(clock=clock, sweep_interval=0.05) as h:
        mine = await h.say(ALICE, "/send_payment ACME 3")
        group = await h.server.wait_for_message(APPROVERS)
        data = group.button(label(group, "Approve"))["callback_data"]
        before = h.server.mark()
        clock.now += 3601  # the payment's VerifyPolicy(expires_in=3600)
        await h.server.wait_until(lambda: all("Expired" in (h.current(m).text or "") for m in (group, mine)))
        assert h.current(group).button_labels == []
        for card in (h.current(group), h.current(mine)):
            assert "Expired" in (card.text or "") and "nothing was done" in (card.text or "").lower()
        told = await h.server.wait_for_message(ALICE.id, since=before)
        assert told.text == "Your request to run send_payment expired; nothing was done."
        assert await h.tap_data(group, data, MARIA) == "This request expired; nothing was done."
        assert await h.store.read("payments") == [] and h.runs == []
        h.assert_every_tap_answered_once()


async def test_redelivered_updates_are_ignored() -> None:
    async with running_bot() as h:
        command = await h.server.send_message(ALICE.id, ALICE, "/delete_note 4")
        card = await h.server.wait_for_message(ALICE.id, since=command)
        await h.server.redeliver(command)
        tap = await h.tap(card, "Confirm", ALICE)
        await h.server.wait_for_message(ALICE.id, since=tap)
        again = await h.server.redeliver(tap)
        await h.server.wait_until(lambda: again.handed_out)
        await h.say(ALICE, "/tools")  # handled after the redeliveries
        cards_sent = [m for m in h.server.messages(ALICE.id) if "Confirm: delete_note" in (m.versions[0].text or "")]
        assert len(cards_sent) == 1 and h.runs == ["delete_note"]
        h.assert_every_tap_answered_once()  # the redelivered tap's query is not answered a second time


async def test_forged_and_malformed_button_data_is_refused() -> None:
    async with running_bot() as h:
        card = await h.say(ALICE, "/delete_note 5")
        ref = card.button(label(card, "Confirm"))["callback_data"].split(":", 1)[1]
        forged = {
            "not button data": "This button is not valid.",
            "confirm:AAAAAAAAAAAAAAAA": "This button is not valid (unknown or removed request).",
            f"approve:{ref}": "This card has no such button for you: nothing was decided.",
            "bogus-action:x": "This button is not valid any more.",
        }
        for data, expected in forged.items():
            assert await h.tap_data(card, data, ALICE) == expected, data
        assert h.runs == [] and h.current(card).button_labels == card.button_labels
        h.assert_every_tap_answered_once()


async def test_taps_no_kit_button_made_are_answered_and_kit_taps_once() -> None:
    async with running_bot() as h:
        card = await h.say(ALICE, "/delete_note 5")
        game = await h.server.tap(card.chat.id, card.message_id, ALICE, "", game_short_name="tetris")
        empty = await h.server.tap(card.chat.id, card.message_id, ALICE, "")
        queries = [h.server.callback_query(update) for update in (game, empty)]
        await h.server.wait_until(lambda: all(q.answered for q in queries), WAIT, what="the stray taps' answers")
        assert [q.answer_text for q in queries] == ["This button is not valid."] * 2
        await h.tap(card, "Confirm", ALICE)  # the kit's own button: the kit's handler alone answers it
        await h.server.wait_until(lambda: h.runs == ["delete_note"], WAIT, what="the confirmed run")
        assert [c.method for c in h.server.calls].count("answerCallbackQuery") == 3
        h.assert_every_tap_answered_once()


async def test_group_chatter_is_ignored_unless_it_is_for_the_bot() -> None:
    async with running_bot() as h:
        await h.server.send_message(APPROVERS, MARIA, "lunch at noon?")
        mention = await h.server.send_message(APPROVERS, MARIA, "@milpa_test_bot what can you do?")
        reply = await h.server.wait_for_message(APPROVERS, since=mention)
        assert "I work with commands" in (reply.text or "")
        command = await h.server.send_message(APPROVERS, MARIA, "/tools@milpa_test_bot")
        tools = await h.server.wait_for_message(APPROVERS, since=command)
        assert "/list_notes" in (tools.text or "") and "/delete_note" not in (tools.text or "")
        await h.server.send_message(APPROVERS, MARIA, "/tools@another_bot")
        await h.say(MARIA, "/start")  # handled after the group messages
        assert [m.message_id for m in h.server.messages(APPROVERS)] == [reply.message_id, tools.message_id]


async def test_typing_is_shown_while_a_slow_tool_runs() -> None:
    async with running_bot() as h:
        asked = time.monotonic()
        update = await h.server.send_message(ALICE.id, ALICE, "/slow_report")
        result = await h.server.wait_for_message(ALICE.id, since=update)
        assert "Report: 12 notes." in (result.text or "")
        typing = [a for a in h.server.chat_actions(ALICE.id) if a.action == "typing"]
        sent = next(c for c in h.server.calls[update.call_index :] if c.method == "sendMessage")
        # shown during the tool's 0.3 s, once it had run the assistant's typing_after (0.2 s), before the result
        assert typing and asked + 0.2 <= typing[0].at < sent.at


async def test_a_tool_that_answers_at_once_shows_no_typing() -> None:
    async with running_bot() as h:
        update = await h.server.send_message(ALICE.id, ALICE, "/list_notes")
        await h.server.wait_for_message(ALICE.id, since=update)
        assert h.server.chat_actions(ALICE.id) == []  # the result itself told the person at once


async def test_a_slow_approved_run_shows_running_then_done() -> None:
    async with running_bot() as h:
        card = await h.say(ALICE, "/delete_note 3")
        take = h.store.take

        async def slow_take(*args: Any, **kwargs: Any) -> Any:
            await asyncio.sleep(0.8)  # the tool itself takes a while (more than show_running_after, 0.5 s)
            return await take(*args, **kwargs)

        h.store.take = slow_take  # type: ignore[method-assign]
        tap = await h.tap(card, "Confirm", ALICE)
        result = await h.server.wait_for_message(ALICE.id, since=tap)
        assert "Deleted note 3" in (result.text or "")
        await h.server.wait_until(lambda: "Done" in (h.current(card).text or ""), what="the card's last edit")
        shown = [v.text or "" for v in h.server.message(ALICE.id, card.message_id).versions]
        assert any("Running" in text for text in shown), shown
        assert [a.action for a in h.server.chat_actions(ALICE.id)] == ["typing"]  # after 0.2 s, once (< 4 s)


async def test_a_slow_delivery_of_a_quick_run_shows_neither_typing_nor_running() -> None:
    async with running_bot() as h:
        card = await h.say(ALICE, "/delete_note 3")
        h.server.arm_latency("editMessageText", 1.2)  # the card's edit to "Done" is answered late
        tap = await h.tap(card, "Confirm", ALICE)
        result = await h.server.wait_for_message(ALICE.id, since=tap)
        assert "Deleted note 3" in (result.text or "")
        await h.server.wait_until(lambda: all(c.status for c in h.server.calls[tap.call_index :]), what="its calls")
        # The tool had run and its result was recorded at once: delivering it is not running
        shown = [v.text or "" for v in h.server.message(ALICE.id, card.message_id).versions]
        assert not any("Running" in text for text in shown) and "Done" in shown[-1], shown
        assert h.server.chat_actions(ALICE.id) == []
        edits = [c for c in h.server.calls[tap.call_index :] if c.method == "editMessageText"]
        assert len(edits) == 1  # one edit: pending -> done


async def test_pages_are_edited_in_place() -> None:
    async with running_bot() as h:
        page = await h.say(ALICE, "/list_notes")
        assert "Buy milk" in (page.text or "") and "Water the plants" not in (page.text or "")
        await h.tap(page, "Next", ALICE)
        await h.server.wait_until(lambda: "Water the plants" in (h.current(page).text or ""))
        assert len(h.server.messages(ALICE.id)) == 1
        other = await h.tap(h.current(page), "Next", BOB)
        assert h.answer(other) == "Only the person who ran this can page through it."
        h.assert_every_tap_answered_once()


async def test_long_results_are_split_and_the_full_content_attached() -> None:
    async with running_bot() as h:
        for number in range(100, 400):
            await h.store.insert("notes", f"{number:08d}", {"id": number, "text": f"shopping list {number} " * 6})
        update = await h.server.send_message(ALICE.id, ALICE, "/search_notes shopping")
        await h.server.wait_until(lambda: any(m.document for m in h.server.messages(ALICE.id)))
        sent = h.server.messages(ALICE.id)
        texts = [m for m in sent if m.document is None]
        assert len(texts) >= 2 and all(len(m.text or "") <= 4096 for m in texts)
        assert "300 notes match 'shopping'" in (texts[0].text or "")
        document = next(m.document for m in sent if m.document is not None)
        assert document is not None and b"shopping list 399" in document.content
        assert sent[0].message_id > update.payload["message"]["message_id"]


async def test_an_unchanged_edit_counts_as_success() -> None:
    async with running_bot() as h:
        h.server.private_chat(ALICE)
        message = cards.text("Nothing new here")
        ref = await h.bot.transport.send(str(ALICE.id), message)
        mark = h.server.mark()
        await h.bot.transport.edit(ref, message)  # Telegram answers "message is not modified"
        edit = next(c for c in h.server.calls[mark:] if c.method == "editMessageText")
        assert edit.status == 400 and "message is not modified" in (edit.error or "")
        assert h.server.message(ALICE.id, int(ref.message_id)).text == "Nothing new here"


async def test_taps_are_answered_at_once_when_asked_to() -> None:
    async with running_bot(answer_within=0) as h:
        card = await h.say(ALICE, "/delete_note 6")
        tap = await h.tap(card, "Confirm", ALICE)
        assert h.answer(tap) == "Working on it…"
        await h.server.wait_until(lambda: "Deleted note 6" in (h.current(card).text or ""))
        assert h.runs == ["delete_note"]
        h.assert_every_tap_answered_once()


class HeldStore(SqliteStore):
    """A SQLite store whose compare-and-set writes wait, once ``hold`` is set, until ``release`` is: the
    assistant is as slow to decide a tap as a store that takes long to answer."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.hold = False
        self.held = asyncio.Event()
        self.release = asyncio.Event()

    async def update(self, *args: Any, **kwargs: Any) -> Any:
        if self.hold:
            self.held.set()
            await self.release.wait()
        return await super().update(*args, **kwargs)


async def test_a_tap_the_assistant_is_slow_to_answer_gets_an_answer_in_time(tmp_path: Path) -> None:
    store = HeldStore(tmp_path / "bot.db")
    async with running_bot(store=store, answer_within=0.05) as h:
        card = await h.say(ALICE, "/delete_note 8")
        store.hold = True
        update = await h.tap(card, "Confirm", ALICE)  # returns once the tap is answered
        assert store.held.is_set() and not store.release.is_set()  # answered while the decision was still being made
        assert h.answer(update) == "Working on it…"
        assert h.runs == []
        store.release.set()
        await h.server.wait_until(lambda: "Deleted note 8" in (h.current(card).text or ""))
        assert h.runs == ["delete_note"]
        h.assert_every_tap_answered_once()


@pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")  # PTB reading RetryAfter.retry_after
async def test_flood_control_is_waited_out() -> None:
    async with running_bot() as h:
        h.server.arm_flood_control(retry_after=1, method="sendMessage")
        update = await h.server.send_message(ALICE.id, ALICE, "/start")
        reply = await h.server.wait_for_message(ALICE.id, since=update, timeout=5)
        assert "Test assistant" in (reply.text or "")
        refused = [c for c in h.server.calls[update.call_index :] if c.method == "sendMessage" and c.status == 429]
        assert len(refused) == 1

"""Streamed answers end to end: unmodified python-telegram-bot and slack-bolt/slack_sdk against the local Bot API
and Slack Web API servers, the openai SDK against the local model server streaming its answer a word at a time.

What a person sees is read back from the servers, in order: the Telegram drafts then the final message, the
edited message in a group (within the group's message limit), the Slack stream's chunks, the plan step of a
gated call going pending → complete when a manager approves on the other platform, and the feedback buttons.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup
from telegram.error import BadRequest

from milpa_chat.bots import TelegramBot
from milpa_chat.bots.slack import SlackBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.gateway import ChatAgent, LlmService
from milpa_chat.store import MemoryStore
from milpa_chat.testing import BotApiServer, TelegramUser
from milpa_chat.testing.llm import FakeOpenAIServer
from milpa_chat.testing.slack import SlackApiServer, SlackEvents, SlackMessage, serve_bolt_app

from ..gateway.agent_tools import Notes, registry_with
from .conftest_slack import ALICE, APPROVERS, EVE, MARIA, SECRET, TEAM, TOKEN, WORK

TG_ALICE = TelegramUser(1001, "Alice", "alice")
TG_MARIA = TelegramUser(2001, "Maria", "maria")
TG_APPROVERS = -500
TG_TEAM = -700
IDENTITIES: dict[str, Any] = {
    "roles": {"writer": ["notes:read", "notes:write", "payments:send"], "manager": ["notes:read", "payments:approve"]},
    "users": {
        "telegram:1001": ["writer"],
        "telegram:2001": ["manager"],
        f"slack:{TEAM}:{ALICE}": ["writer"],
        f"slack:{TEAM}:{MARIA}": ["manager"],
        f"slack:{TEAM}:{EVE}": ["writer"],
    },
    "approvers": {"telegram": [str(TG_APPROVERS)]},
}
ANSWER = (
    "You have three notes: milk, eggs and bread. The oldest is milk, written on Monday; eggs and bread came "
    "later in the week. Nothing else is stored."
)


@dataclass
class World:
    llm: FakeOpenAIServer
    tg: BotApiServer
    api: SlackApiServer
    slack: SlackEvents
    slack_bot: SlackBot
    assistant: Assistant
    notes: Notes

    def dm(self, user: str = ALICE) -> str:
        return "D" + user[1:]

    def streamed(self, channel: str) -> list[SlackMessage]:
        return [m for m in self.api.messages(channel) if m.via == "chat.startStream"]


@asynccontextmanager
async def world(*, group_rate: int | None = None) -> AsyncIterator[World]:
    notes = Notes()
    async with AsyncExitStack() as stack:
        llm_server = await stack.enter_async_context(FakeOpenAIServer())
        tg = await stack.enter_async_context(BotApiServer(group_rate=group_rate))
        api = await stack.enter_async_context(SlackApiServer(TOKEN, team_id=TEAM, channels=[WORK, APPROVERS]))
        llm = await stack.enter_async_context(
            LlmService(model="gpt-test", api_key=llm_server.api_key, base_url=llm_server.base_url, max_retries=0)
        )
        tg.group(TG_APPROVERS, "Approvers", members=[TG_MARIA])
        tg.group(TG_TEAM, "Team", members=[TG_ALICE])
        assistant = Assistant(
            registry_with(notes, MemoryStore()),
            Identities.from_dict(IDENTITIES),
            agent=ChatAgent(llm),
            feedback=True,
        )
        telegram_bot = TelegramBot(assistant, tg.token, tg.base_url, sweep_interval=None)
        slack_bot = SlackBot(assistant, TOKEN, SECRET, api.base_url)
        await telegram_bot.start(poll_timeout=1)
        stack.push_async_callback(telegram_bot.stop)
        url = await stack.enter_async_context(serve_bolt_app(slack_bot.web_app()))
        slack = await stack.enter_async_context(SlackEvents(url, SECRET, api=api))
        yield World(llm_server, tg, api, slack, slack_bot, assistant, notes)


MARKS = ("⏳", "🔄", "✅", "❌")


def _answer_of(shown: str) -> str:
    """The answer's text below the plan's step lines (a line each, starting with its state's mark)."""
    lines = shown.split("\n")
    while lines and lines[0].startswith(MARKS):
        lines.pop(0)
    return "\n".join(lines).strip()


async def test_telegram_private_chat_streams_drafts_in_order_then_the_whole_answer() -> None:
    async with world() as w:
        w.llm.reply_tool_call("list_notes", {}, id="look").reply_text(ANSWER, chunk_delay=0.03)
        asked = await w.tg.send_message(TG_ALICE.id, TG_ALICE, "what notes do I have?")
        final = await w.tg.wait_for_message(TG_ALICE.id, since=asked, timeout=15)

        drafts = w.tg.drafts(TG_ALICE.id)
        assert drafts and len({d.draft_id for d in drafts}) == 1 and drafts[0].draft_id != 0
        shown = [_answer_of(d.text) for d in drafts]
        # each draft grows the one before it, and every one is the start of the answer
        assert all(ANSWER.startswith(text) for text in shown)
        assert [len(t) for t in shown] == sorted(len(t) for t in shown)
        assert any("List the notes…" in d.text for d in drafts)  # the tool call was a step while it ran
        assert final.text == ANSWER  # the message that stays is the answer: done steps were the draft's
        assert final.button_labels == ["👍", "👎"]
        assert len(w.tg.messages(TG_ALICE.id)) == 1  # drafts leave nothing behind but the final message

        tap = await w.tg.tap_button(final, "👎", TG_ALICE)
        await w.tg.wait_until(lambda: w.tg.callback_query(tap).answered)
        recorded = await w.assistant.answer_feedback.read()
        assert [(e.rating, e.principal, e.surface) for e in recorded] == [("down", "telegram:1001", "telegram")]
        assert w.tg.callback_query(tap).answer_text == "Thanks for the feedback."
        print(f"\nTelegram private chat: {len(drafts)} drafts, then the final message")


async def test_telegram_group_edits_one_message_within_the_groups_message_limit() -> None:
    async with world(group_rate=20) as w:
        long_answer = " ".join([ANSWER] * 2)
        w.llm.reply_text(long_answer, chunk_delay=0.1)
        asked = await w.tg.send_message(TG_TEAM, TG_ALICE, "@milpa_test_bot what notes do I have?")
        message = await w.tg.wait_for_message(TG_TEAM, since=asked, timeout=15)
        await w.tg.wait_until(lambda: w.tg.message(TG_TEAM, message.message_id).button_labels, timeout=20)

        final = w.tg.message(TG_TEAM, message.message_id)
        versions = [v.text or "" for v in final.versions]
        assert final.text == long_answer and final.button_labels == ["👍", "👎"]
        assert all(long_answer.startswith(v.rstrip("…")) for v in versions[:-1])
        assert w.tg.drafts() == []  # drafts are for private chats: none was tried in the group
        assert w.tg.flood_refusals == []  # never over Telegram's 20 messages a minute in the group
        assert len([m for m in w.tg.messages(TG_TEAM) if m.sender.id == w.tg.bot.id]) == 1
        print(f"\nTelegram group: 1 message, {len(versions) - 1} edits for a {len(long_answer)}-character answer")


async def test_slack_dm_streams_into_the_thread_and_feedback_is_recorded_once_per_person() -> None:
    async with world() as w:
        w.llm.reply_tool_call("list_notes", {}, id="look").reply_text(ANSWER, chunk_delay=0.02)
        events: list[Any] = []
        w.assistant.registry.dispatcher.subscribe("chat.feedback", lambda _e, p: events.append(p["event"]))
        await w.slack.direct_message("what notes do I have?", user=ALICE)
        await w.slack_bot.drain()
        asked = w.api.messages(w.dm())[0]

        streamed = w.streamed(w.dm())
        assert len(streamed) == 1
        answer = streamed[0]
        assert answer.thread_ts == asked.ts and answer.stream_state == "stopped"
        assert answer.text == ANSWER  # the markdown chunks, in order, are the whole answer
        assert answer.tasks() == {"look": ["in_progress", "complete"]} or answer.tasks() == {"look": ["complete"]}
        assert [c["type"] for c in answer.chunks].count("markdown_text") >= 2  # it streamed, not one block
        start = w.api.calls("chat.startStream")[0]
        assert start.args["task_display_mode"] == "plan" and "recipient_user_id" not in start.args

        up = answer.find_action("milpa:feedback:0")[1]["positive_button"]["value"]
        await w.slack.click(answer, "milpa:feedback:0", user=ALICE, value=up)
        await w.slack.click(answer, "milpa:feedback:0", user=ALICE, value=up.replace(".up", ".down"))
        await w.slack_bot.drain()
        recorded = await w.assistant.answer_feedback.read()
        assert [(e.rating, e.principal, e.answer) for e in recorded] == [("up", f"slack:{TEAM}:{ALICE}", ANSWER)]
        assert events == recorded
        assert "already recorded" in w.api.ephemeral_messages(ALICE)[-1].text

        # the same button's data tapped from another conversation records nothing
        forged = w.slack.payloads.block_action(
            {"type": "button", "action_id": "milpa:feedback:0", "value": up},
            block_id="x",
            user=EVE,
            channel=WORK,
            message_ts=answer.ts,
            message={"type": "message", "ts": answer.ts, "blocks": answer.blocks},
        )
        await w.slack.send(forged)
        await w.slack_bot.drain()
        assert len(await w.assistant.answer_feedback.read()) == 1


async def test_slack_without_streaming_answers_in_an_edited_thread_reply() -> None:
    async with world() as w:
        w.api.fail_next("chat.startStream", "not_allowed_token_type", times=3)
        w.llm.reply_text(ANSWER, chunk_delay=0.05)
        await w.slack.direct_message("what notes do I have?", user=ALICE)
        await w.slack_bot.drain()
        asked = w.api.messages(w.dm())[0]
        replies = [m for m in w.api.messages(w.dm()) if m.via == "chat.postMessage"]
        assert w.streamed(w.dm()) == [] and len(replies) == 1
        reply = replies[0]
        assert reply.thread_ts == asked.ts and ANSWER in reply.all_text()
        assert [b["text"]["text"] for b in reply.buttons()] == ["👍", "👎"]
        assert len(w.api.calls("chat.startStream")) == 1  # refused once: the rest of the answer never asks again


async def test_slack_mention_in_a_channel_streams_to_the_person_who_asked() -> None:
    async with world() as w:
        w.llm.reply_text("Three notes.", chunk_delay=0.01)
        await w.slack.app_mention("how many notes?", user=ALICE, channel=WORK)
        await w.slack_bot.drain()
        start = w.api.calls("chat.startStream")[0]
        assert start.args["recipient_user_id"] == ALICE and start.args["recipient_team_id"] == TEAM
        assert w.streamed(WORK)[0].text == "Three notes."


async def test_the_plan_step_of_a_gated_call_goes_pending_then_complete_when_a_manager_approves_on_telegram() -> None:
    async with world() as w:
        w.llm.reply_tool_call("pay", {"to": "ACME", "amount": 120}, id="pay1")
        w.llm.reply_text("Paid ACME 120. Anything else?", chunk_delay=0.01)
        await w.slack.direct_message("pay ACME 120", user=ALICE)
        await w.slack_bot.drain()
        first = w.streamed(w.dm())[0]
        assert first.stream_state == "stopped" and first.tasks()["pay1"][-1] == "pending"
        title = first.task_titles()["pay1"]
        assert title == f"Waiting for approval by payments:approve — card in chat {TG_APPROVERS} on Telegram"
        assert w.notes.paid == []

        card = w.tg.last_message(TG_APPROVERS)
        approve = next(label for label in card.button_labels if "Approve" in label)
        await w.tg.tap_button(card, approve, TG_MARIA)
        await w.api.wait_until(lambda: len(w.streamed(w.dm())) == 2 and w.streamed(w.dm())[1].stream_state, timeout=10)
        await w.api.wait_until(lambda: w.streamed(w.dm())[1].stream_state == "stopped", timeout=10)

        second = w.streamed(w.dm())[1]
        assert second.thread_ts == first.thread_ts  # the same thread
        assert second.task_titles()["pay1"] == title and second.tasks()["pay1"] == ["complete"]
        assert "Maria" in str(next(c for c in second.chunks if c.get("id") == "pay1").get("details"))
        assert second.text == "Paid ACME 120. Anything else?" and w.notes.paid == [("ACME", 120.0)]


async def test_a_rejected_call_ends_its_plan_step_in_error_and_nothing_runs() -> None:
    async with world() as w:
        w.llm.reply_tool_call("pay", {"to": "ACME", "amount": 99}, id="pay2")
        w.llm.reply_text("The payment was rejected; nothing was paid.")
        await w.tg.send_message(TG_ALICE.id, TG_ALICE, "pay ACME 99")

        def waiting() -> Any:
            return next((d for d in w.tg.drafts(TG_ALICE.id) if d.text.startswith("⏳")), None)

        shown = await w.tg.wait_until(waiting, timeout=10)  # the draft shows the step while the card waits
        assert shown.text.startswith("⏳ Waiting for approval by payments:approve — card in chat -500 on Telegram")
        await w.tg.wait_for_message(TG_APPROVERS, timeout=10)
        card = w.tg.last_message(TG_APPROVERS)
        await w.tg.tap_button(card, next(label for label in card.button_labels if "Reject" in label), TG_MARIA)

        def answered() -> Any:
            return next((m for m in w.tg.messages(TG_ALICE.id) if "nothing was paid" in (m.text or "")), None)

        final = await w.tg.wait_until(answered, timeout=10)
        assert (final.text or "").startswith("❌ Waiting for approval by payments:approve") and w.notes.paid == []


async def test_telegram_approve_reject_confirm_cancel_carry_their_styles() -> None:
    """Telegram Approve/Reject (and Confirm/Cancel) carry green and red; Edit and Show all stay neutral."""
    async with world() as w:
        w.llm.reply_tool_call("pay", {"to": "ACME", "amount": 5}, id="p")
        await w.tg.send_message(TG_ALICE.id, TG_ALICE, "pay ACME 5")
        card = await w.tg.wait_for_message(TG_APPROVERS, timeout=10)
        styles = {b["text"]: b.get("style") for row in card.buttons for b in row}
        assert styles == {"✅ Approve": "success", "⛔ Reject": "danger"}
        assert w.notes.paid == []  # the model asked; only a person's tap decides

        w.llm.reply_tool_call("delete_note", {"note_id": 1}, id="d")
        await w.tg.send_message(TG_ALICE.id, TG_ALICE, "delete the milk note")
        confirm = await w.tg.wait_until(
            lambda: next((m for m in w.tg.messages(TG_ALICE.id) if "Confirm" in " ".join(m.button_labels)), None)
        )
        assert {b["text"]: b.get("style") for row in confirm.buttons for b in row} == {
            "✅ Confirm": "success",
            "✖ Cancel": "danger",
        }


@pytest.mark.parametrize(
    ("style", "refused"),
    [("success", False), ("danger", False), ("primary", False), ("green", True), ("", True)],
)
async def test_the_local_bot_api_checks_button_styles_as_telegram_does(style: str, refused: bool) -> None:
    async with BotApiServer() as tg:
        tg.private_chat(TG_ALICE)
        async with Bot(tg.token, base_url=tg.base_url) as bot:
            markup = InlineKeyboardMarkup([[InlineKeyboardButton("Go", callback_data="go:1", style=style)]])
            if refused:
                with pytest.raises(BadRequest, match="style"):
                    await bot.send_message(TG_ALICE.id, "hi", reply_markup=markup)
            else:
                await bot.send_message(TG_ALICE.id, "hi", reply_markup=markup)
                assert tg.last_message(TG_ALICE.id).buttons[0][0]["style"] == style


async def test_failing_platform_calls_never_lose_the_answer() -> None:
    """Drafts refused by Telegram, and a Slack stream whose stop fails: the person still gets the whole answer."""
    async with world() as w:
        w.tg.arm_error("sendMessageDraft", 500, "Internal Server Error: restart", times=50)
        w.llm.reply_text(ANSWER, chunk_delay=0.02)
        asked = await w.tg.send_message(TG_ALICE.id, TG_ALICE, "what notes do I have?")
        final = await w.tg.wait_for_message(TG_ALICE.id, since=asked, timeout=15)
        assert final.text == ANSWER and w.tg.drafts(TG_ALICE.id) == []

        w.api.fail_next("chat.stopStream", "internal_error")
        w.llm.reply_text(ANSWER, chunk_delay=0.02)
        await w.slack.direct_message("what notes do I have?", user=ALICE)
        await w.slack_bot.drain()
        posted = [m for m in w.api.messages(w.dm()) if m.via == "chat.postMessage"]
        assert len(posted) == 1 and ANSWER in posted[0].all_text()

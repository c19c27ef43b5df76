"""The local servers' streaming methods, through the real clients: they accept what the platforms accept, refuse
what they refuse with an error naming the problem, and record what a person saw, in order."""

from __future__ import annotations

from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from telegram import Bot
from telegram.error import BadRequest, RetryAfter

from milpa_chat.testing import BotApiServer, TelegramUser
from milpa_chat.testing.slack import SlackApiServer

ALICE = TelegramUser(1001, "Alice", "alice")
TOKEN = "xoxb-test"


async def test_telegram_drafts_go_to_private_chats_only_and_are_recorded_in_order() -> None:
    async with BotApiServer() as tg:
        tg.private_chat(ALICE)
        tg.group(-42, "Team", members=[ALICE])
        async with Bot(tg.token, base_url=tg.base_url) as bot:
            assert await bot.send_message_draft(ALICE.id, 7, text="") is True  # the "Thinking…" placeholder
            assert await bot.send_message_draft(ALICE.id, 7, text="Hello")
            assert await bot.send_message_draft(ALICE.id, 7, text="<b>Hello</b> there", parse_mode="HTML")
            with pytest.raises(BadRequest, match="private chats"):
                await bot.send_message_draft(-42, 7, text="Hello")
            with pytest.raises(BadRequest, match="non-zero"):
                await bot.send_message_draft(ALICE.id, 0, text="Hello")
            with pytest.raises(BadRequest, match="too long"):
                await bot.send_message_draft(ALICE.id, 7, text="x" * 4097)
            with pytest.raises(BadRequest, match="parse entities"):
                await bot.send_message_draft(ALICE.id, 7, text="<b>Hello", parse_mode="HTML")
            with pytest.raises(BadRequest, match=r"(?i)chat not found"):
                await bot.send_message_draft(5555, 7, text="Hello")
        drafts = tg.drafts(ALICE.id)
        assert [d.text for d in drafts] == ["", "Hello", "Hello there"]
        assert drafts[2].entities == ({"type": "bold", "offset": 0, "length": 5},)
        assert tg.messages(ALICE.id) == []  # a draft is no message


async def test_telegram_group_rate_answers_429_beyond_the_limit() -> None:
    async with BotApiServer(group_rate=3) as tg:
        tg.group(-42, "Team", members=[ALICE])
        async with Bot(tg.token, base_url=tg.base_url) as bot:
            sent = await bot.send_message(-42, "one")
            await bot.edit_message_text("one!", chat_id=-42, message_id=sent.message_id)
            await bot.send_message(-42, "two")
            with pytest.raises(RetryAfter) as refused:
                await bot.send_message(-42, "three")
            assert "retry in" in refused.value.message.lower()
        assert tg.flood_refusals == [("sendmessage", -42)]


def _client(api: SlackApiServer) -> AsyncWebClient:
    return AsyncWebClient(token=TOKEN, base_url=api.base_url)


async def _error(call: Any) -> str:
    with pytest.raises(SlackApiError) as failed:
        await call
    return str(failed.value.response["error"]) + " " + str(failed.value.response.data)


async def test_slack_streams_start_append_stop_in_order_and_refuse_what_slack_refuses() -> None:
    async with SlackApiServer(TOKEN, channels=["C1"]) as api:
        client = _client(api)
        asked = api.add_user_message("D1001", "hi", user="U1001")
        started = await client.chat_startStream(
            channel="D1001",
            thread_ts=asked.ts,
            chunks=[{"type": "task_update", "id": "s1", "title": "Looking up invoices…", "status": "in_progress"}],
            task_display_mode="plan",
        )
        ts = started["ts"]
        await client.chat_appendStream(channel="D1001", ts=ts, markdown_text="Two open ")
        await client.chat_appendStream(
            channel="D1001",
            ts=ts,
            chunks=[
                {"type": "task_update", "id": "s1", "title": "Looking up invoices…", "status": "complete"},
                {"type": "markdown_text", "text": "invoices."},
            ],
        )
        await client.chat_stopStream(channel="D1001", ts=ts)
        message = api.message("D1001", ts)
        assert message.text == "Two open invoices." and message.thread_ts == asked.ts
        assert message.tasks() == {"s1": ["in_progress", "complete"]} and message.stream_state == "stopped"

        # a stopped stream takes nothing more
        assert "message_not_in_streaming_state" in await _error(client.chat_stopStream(channel="D1001", ts=ts))
        assert "message_not_in_streaming_state" in await _error(
            client.chat_appendStream(channel="D1001", ts=ts, markdown_text="more")
        )
        # thread_ts is required; a channel needs the person streamed to
        assert "thread_ts" in await _error(client.api_call("chat.startStream", json={"channel": "D1001"}))
        assert "recipient_user_id" in await _error(client.chat_startStream(channel="C1", thread_ts=asked.ts))
        # chunks are checked: their type, their fields, a task's status
        bad_chunks: list[tuple[dict[str, Any], str]] = [
            ({"type": "shout", "text": "x"}, "unsupported chunk type"),
            ({"type": "markdown_text", "text": ""}, "[text]"),
            ({"type": "task_update", "id": "s", "title": "t", "status": "done"}, "status must be one of"),
            ({"type": "task_update", "id": "s", "status": "pending"}, "[title]"),
            ({"type": "plan_update"}, "[title]"),
        ]
        for chunk, problem in bad_chunks:
            error = await _error(client.chat_startStream(channel="D1001", thread_ts=asked.ts, chunks=[chunk]))
            assert error.startswith("invalid_chunks") and problem in error, error
        # the ts must be a stream: an ordinary message is not one
        posted = await client.chat_postMessage(channel="D1001", text="plain")
        assert "invalid_ts" in await _error(
            client.chat_appendStream(channel="D1001", ts=posted["ts"], markdown_text="x")
        )
        # the stop's blocks are Block Kit checked (a feedback element needs its buttons' values)
        again = await client.chat_startStream(channel="D1001", thread_ts=asked.ts, markdown_text="ok")
        no_value = {
            "type": "context_actions",
            "elements": [
                {
                    "type": "feedback_buttons",
                    "action_id": "f",
                    "positive_button": {"text": {"type": "plain_text", "text": "👍"}},
                    "negative_button": {"text": {"type": "plain_text", "text": "👎"}, "value": "n"},
                }
            ],
        }
        assert "invalid_blocks" in await _error(
            client.chat_stopStream(channel="D1001", ts=again["ts"], blocks=[no_value])
        )


async def test_slack_sdks_chat_stream_helper_works_against_the_local_server() -> None:
    async with SlackApiServer(TOKEN) as api:
        client = _client(api)
        asked = api.add_user_message("D1001", "hi", user="U1001")
        streamer = await client.chat_stream(channel="D1001", thread_ts=asked.ts, buffer_size=8)
        for piece in ["Hello ", "there, ", "this is ", "streamed."]:
            await streamer.append(markdown_text=piece)
        await streamer.stop()
        streamed = [m for m in api.messages("D1001") if m.via == "chat.startStream"]
        assert len(streamed) == 1 and streamed[0].text == "Hello there, this is streamed."
        assert len(api.calls("chat.appendStream")) >= 1

"""The local Slack Web API's ``assistant.threads.*`` through the real slack_sdk client: Slack's checks and answers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from milpa_chat.testing.slack import SlackApiServer

TOKEN = "xoxb-threads"


@pytest.fixture
async def api() -> AsyncIterator[SlackApiServer]:
    async with SlackApiServer(TOKEN, channels=["C1"]) as server:
        yield server


@pytest.fixture
async def client(api: SlackApiServer) -> AsyncIterator[AsyncWebClient]:
    client = AsyncWebClient(token=TOKEN, base_url=api.base_url)
    yield client
    if client.session is not None:
        await client.session.close()


async def refused(call: Awaitable[Any]) -> dict[str, Any]:
    with pytest.raises(SlackApiError) as err:
        await call
    data = err.value.response.data
    assert isinstance(data, dict), data
    return dict(data)


async def test_status_is_shown_then_cleared_by_the_apps_reply(api: SlackApiServer, client: AsyncWebClient) -> None:
    thread = api.open_assistant_thread("U1", context={"channel_id": "C1"})
    await client.assistant_threads_setStatus(
        channel_id=thread.channel_id, thread_ts=thread.thread_ts, status="is thinking…", loading_messages=["Reading…"]
    )
    assert thread.status == "is thinking…" and thread.loading_messages == ["Reading…"]
    await client.chat_postMessage(channel=thread.channel_id, thread_ts=thread.thread_ts, text="Here you are.")
    assert thread.status == "" and thread.statuses == ["is thinking…"]
    await client.assistant_threads_setStatus(channel_id=thread.channel_id, thread_ts=thread.thread_ts, status="x")
    await client.assistant_threads_setStatus(channel_id=thread.channel_id, thread_ts=thread.thread_ts, status="")
    assert thread.status == ""


async def test_required_arguments_are_named(api: SlackApiServer, client: AsyncWebClient) -> None:
    thread = api.open_assistant_thread("U1")
    body = await refused(client.api_call("assistant.threads.setStatus", json={"channel_id": thread.channel_id}))
    assert body["error"] == "invalid_arguments"
    assert body["response_metadata"] == {"messages": ["[ERROR] missing required field: thread_ts"]}
    body = await refused(
        client.api_call("assistant.threads.setTitle", json={"channel_id": thread.channel_id, "thread_ts": "1.2"})
    )
    assert "is not an assistant thread" in str(body["response_metadata"])
    body = await refused(
        client.assistant_threads_setStatus(channel_id="C404", thread_ts=thread.thread_ts, status="is thinking…")
    )
    assert body["error"] == "channel_not_found"
    body = await refused(
        client.assistant_threads_setStatus(
            channel_id=thread.channel_id, thread_ts=thread.thread_ts, status="…", loading_messages=["m"] * 11
        )
    )
    assert "no more than 10 items" in str(body["response_metadata"])


async def test_suggested_prompts_as_slack_checks_them(api: SlackApiServer, client: AsyncWebClient) -> None:
    thread = api.open_assistant_thread("U1")
    where = {"channel_id": thread.channel_id, "thread_ts": thread.thread_ts}
    five = [{"title": f"t{i}", "message": f"m{i}"} for i in range(5)]
    body = await refused(client.assistant_threads_setSuggestedPrompts(**where, prompts=five))
    assert body["error"] == "invalid_arguments" and "no more than 4 items" in str(body["response_metadata"])
    body = await refused(client.assistant_threads_setSuggestedPrompts(**where, prompts=[{"title": "only a title"}]))
    assert "missing required field: message [json-pointer:/prompts/0/message]" in str(body["response_metadata"])
    body = await refused(client.assistant_threads_setSuggestedPrompts(**where, prompts=[]))
    assert "non-empty array" in str(body["response_metadata"])
    await client.assistant_threads_setSuggestedPrompts(**where, prompts=five[:4], title="Try:")
    assert [p["title"] for p in thread.prompts] == ["t0", "t1", "t2", "t3"] and thread.prompts_title == "Try:"
    await client.assistant_threads_setTitle(**where, title="Payments")
    assert api.assistant_thread(thread.channel_id, thread.thread_ts).title == "Payments"


async def test_the_scope_is_needed() -> None:
    async with SlackApiServer(TOKEN, scopes=("chat:write",)) as api:
        thread = api.open_assistant_thread("U1")
        client = AsyncWebClient(token=TOKEN, base_url=api.base_url)
        body = await refused(
            client.assistant_threads_setTitle(channel_id=thread.channel_id, thread_ts=thread.thread_ts, title="t")
        )
        assert body["error"] == "missing_scope" and body["needed"] == "assistant:write"
        if client.session is not None:
            await client.session.close()


async def test_your_own_bolt_assistant_with_bolts_default_context_store() -> None:
    """A bolt ``AsyncAssistant`` of your own, unchanged: its greeting carries the thread's context as message
    metadata, ``get_thread_context`` reads it back through ``conversations.replies``, and a context change is saved
    with ``chat.update`` — all against the local server."""
    from slack_bolt.async_app import AsyncApp, AsyncAssistant

    from milpa_chat.testing.slack import SlackEvents, serve_bolt_app

    async with SlackApiServer(TOKEN, channels=["C1", "C2"]) as api:
        client = AsyncWebClient(token=TOKEN, base_url=api.base_url)
        app = AsyncApp(client=client, signing_secret="secret")
        assistant = AsyncAssistant()
        contexts: list[dict[str, object]] = []

        @assistant.thread_started
        async def started(say, set_suggested_prompts) -> None:
            await say("Hi! What can I do?")
            await set_suggested_prompts(prompts=[{"title": "Status", "message": "how is the deploy?"}])

        @assistant.user_message
        async def asked(get_thread_context, set_status, say) -> None:
            await set_status("is thinking…")
            contexts.append(dict(await get_thread_context() or {}))
            await say("On it.")

        app.assistant(assistant)
        async with serve_bolt_app(app) as url, SlackEvents(url, "secret", api=api) as slack:
            opened = await slack.assistant_thread_started(user="U1", context_channel="C1")
            ts = opened.request.payload["event"]["assistant_thread"]["thread_ts"]
            thread = api.assistant_thread("D1", ts)
            await api.wait_until(lambda: thread.prompts, what="the suggested prompts")
            await slack.direct_message("how is the deploy?", user="U1", thread_ts=ts)
            await api.wait_until(lambda: len(api.messages("D1", thread_ts=ts)) >= 3, what="the answer")
            assert contexts[0]["channel_id"] == "C1" and thread.statuses == ["is thinking…"] and thread.status == ""
            await slack.assistant_thread_context_changed(user="U1", thread_ts=ts, context_channel="C2")
            await api.wait_for_call("chat.update")
            await slack.direct_message("and now?", user="U1", thread_ts=ts)
            await api.wait_until(lambda: len(contexts) == 2, what="the second request")
            assert contexts[1]["channel_id"] == "C2"
        if client.session is not None:
            await client.session.close()


async def test_metadata_and_replies_as_slack_checks_them(api: SlackApiServer, client: AsyncWebClient) -> None:
    body = await refused(client.chat_postMessage(channel="C1", text="x", metadata={"event_payload": {}}))
    assert body["error"] == "invalid_metadata_format" and api.messages("C1") == []
    parent = await client.chat_postMessage(channel="C1", text="parent")
    meta = {"event_type": "task", "event_payload": {"id": 7}}
    await client.chat_postMessage(channel="C1", text="reply", thread_ts=parent["ts"], metadata=meta)
    plain = await client.conversations_replies(channel="C1", ts=parent["ts"])
    assert [m["text"] for m in plain["messages"]] == ["parent", "reply"] and "metadata" not in plain["messages"][1]
    full = await client.conversations_replies(channel="C1", ts=parent["ts"], include_all_metadata=True)
    assert full["messages"][1]["metadata"] == meta
    body = await refused(client.conversations_replies(channel="C1", ts="1.000001"))
    assert body["error"] == "thread_not_found"

"""A real slack-bolt app (ASGI via uvicorn, and the sync App in-process) against the local Slack Web API server,
receiving requests signed with its signing secret. No network beyond 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvicorn
from slack_bolt import App, BoltRequest
from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from milpa_chat.testing.slack import (
    SlackAckTimeout,
    SlackApiServer,
    SlackEvents,
    SlackPayloads,
    SlackRequestSigner,
    serve_bolt_app,
)

TOKEN = "xoxb-test-token"
SECRET = "test-signing-secret"


def button(action_id: str, label: str) -> dict[str, Any]:
    return {"type": "button", "action_id": action_id, "value": "req-1", "text": {"type": "plain_text", "text": label}}


CARD: list[dict[str, Any]] = [
    {"type": "section", "block_id": "q", "text": {"type": "mrkdwn", "text": "Approve *deploy*?"}},
    {"type": "actions", "block_id": "req-1", "elements": [button("approve", "Approve"), button("deny", "Deny")]},
]


@dataclass
class Seen:
    """What the app's listeners observed."""

    runs: list[str] = field(default_factory=list)
    retry_nums: list[str | None] = field(default_factory=list)
    errors: list[tuple[str, int, str | None]] = field(default_factory=list)


def build_app(api: SlackApiServer, seen: Seen, client: AsyncWebClient | None = None) -> AsyncApp:
    app = AsyncApp(signing_secret=SECRET, client=client or AsyncWebClient(token=TOKEN, base_url=api.base_url))

    @app.middleware
    async def record_retry(req: Any, resp: Any, next: Any) -> Any:
        seen.retry_nums.append((req.headers.get("x-slack-retry-num") or [None])[0])
        return await next()

    @app.command("/deploy")
    async def deploy(ack: Any, command: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        seen.runs.append("deploy")
        await client.chat_postMessage(channel=command["channel_id"], text="Approve deploy?", blocks=CARD)

    @app.command("/slow")
    async def slow(ack: Any) -> None:
        await asyncio.sleep(1.0)
        await ack()

    @app.command("/post")
    async def post(ack: Any, command: dict[str, Any], client: AsyncWebClient) -> None:
        await ack("posting")
        header = {"type": "header", "text": {"type": "plain_text", "text": command["text"]}}
        try:
            await client.chat_postMessage(channel=command["channel_id"], text="x", blocks=[header])
        except SlackApiError as exc:
            resp = exc.response
            seen.errors.append((resp["error"], resp.status_code, resp.headers.get("Retry-After")))

    add_interactions(app, seen)
    return app


def add_interactions(app: AsyncApp, seen: Seen) -> None:
    @app.action("approve")
    async def approve(ack: Any, body: dict[str, Any], client: AsyncWebClient, respond: Any) -> None:
        await ack()
        seen.runs.append("approve")
        who = body["user"]["id"]
        done = [{"type": "section", "text": {"type": "mrkdwn", "text": f"Approved by <@{who}>"}}]
        await client.chat_update(channel=body["channel"]["id"], ts=body["message"]["ts"], text="Approved", blocks=done)
        await respond(text="Thanks, noted.", response_type="ephemeral", replace_original=False)

    @app.action("deny")
    async def deny(ack: Any, respond: Any) -> None:
        await ack()
        seen.runs.append("deny")
        await respond(text="Denied", replace_original=True, blocks=[])

    @app.event("app_mention")
    async def mention(event: dict[str, Any], say: Any) -> None:
        seen.runs.append("mention")
        await say(text=f"Hi <@{event['user']}>", thread_ts=event["ts"])

    @app.event("message")
    async def direct(event: dict[str, Any], say: Any) -> None:
        seen.runs.append("dm")
        await say(text=f"echo: {event['text']}")


@pytest.fixture
async def api() -> AsyncIterator[SlackApiServer]:
    async with SlackApiServer(TOKEN, channels={"C1": "general"}) as server:
        yield server


async def serve(app: AsyncApp) -> tuple[uvicorn.Server, asyncio.Task[None], str]:
    handler = AsyncSlackRequestHandler(app)

    async def endpoint(request: Request) -> Response:
        return await handler.handle(request)

    star = Starlette(routes=[Route("/slack/events", endpoint=endpoint, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(star, log_level="warning", lifespan="off"))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()  # connections wait in the backlog until uvicorn accepts them
    task = asyncio.create_task(server.serve(sockets=[sock]))
    return server, task, f"http://127.0.0.1:{sock.getsockname()[1]}/slack/events"


@pytest.fixture
async def bolt(api: SlackApiServer) -> AsyncIterator[tuple[SlackEvents, Seen]]:
    seen = Seen()
    server, task, url = await serve(build_app(api, seen))
    async with SlackEvents(url, SECRET, api=api) as slack:
        yield slack, seen
    server.should_exit = True
    await task


# --- slack-bolt behind uvicorn ---------------------------------------------------------------------------------


async def test_slash_command_acks_then_posts_the_card(bolt: tuple[SlackEvents, Seen], api: SlackApiServer) -> None:
    slack, _ = bolt
    resp = await slack.command("/deploy", "prod", user="U2", channel="C1")
    assert resp.status == 200  # within Slack's 3 s: SlackEvents raises SlackAckTimeout past it
    card = await api.wait_for_message("C1")
    assert card.text == "Approve deploy?" and [b["action_id"] for b in card.buttons()] == ["approve", "deny"]
    post = api.calls("chat.postMessage")[0]
    assert post.token == TOKEN and post.content_type == "application/json"
    assert [c.method for c in api.calls()][:1] == ["auth.test"]  # bolt's lazy authorization


async def test_button_tap_updates_the_card_and_answers_through_response_url(
    bolt: tuple[SlackEvents, Seen], api: SlackApiServer
) -> None:
    slack, seen = bolt
    await slack.command("/deploy", user="U2")
    card = await api.wait_for_message("C1")
    resp = await slack.click(card, "approve", user="U3")
    assert resp.status == 200 and resp.text == ""
    await api.wait_for(lambda: card.edited and api.ephemeral_messages("U3"))
    assert card.text == "Approved" and card.all_text().endswith("Approved by <@U3>") and card.buttons() == []
    assert card.history[0].text == "Approve deploy?" and len(card.history[0].blocks) == 2
    [note] = api.ephemeral_messages("U3", channel="C1")
    assert note.text == "Thanks, noted." and note.via == "response_url"
    assert api.calls("response_url")[0].token is None and seen.runs == ["deploy", "approve"]


async def test_response_url_replace_original(bolt: tuple[SlackEvents, Seen], api: SlackApiServer) -> None:
    slack, _ = bolt
    await slack.command("/deploy")
    card = await api.wait_for_message("C1")
    await slack.click(card, "deny", user="U3")
    await api.wait_for(lambda: card.edited)
    assert card.text == "Denied" and card.blocks == [] and api.messages("C1") == [card]


async def test_app_mention_and_direct_message(bolt: tuple[SlackEvents, Seen], api: SlackApiServer) -> None:
    slack, _ = bolt
    resp = await slack.app_mention("hello there", user="U2", channel="C1")
    assert resp.status == 200
    asked = resp.request.payload["event"]
    assert asked["text"] == "<@U0BOT> hello there" and resp.request.payload["event_id"].startswith("Ev")
    reply = await api.wait_for_message("C1", lambda m: m.user == "U0BOT")
    assert reply.text == "Hi <@U2>" and reply.thread_ts == asked["ts"]
    assert api.messages("C1", thread_ts=asked["ts"]) == [reply]
    await slack.direct_message("ping", user="U2")
    echo = await api.wait_for_message("D2", lambda m: m.user == "U0BOT")
    assert echo.text == "echo: ping" and api.workspace.channels["D2"].is_im


async def test_bad_signature_and_stale_timestamp_are_refused(
    bolt: tuple[SlackEvents, Seen], api: SlackApiServer
) -> None:
    slack, seen = bolt
    request = slack.payloads.command("/deploy")
    assert (await slack.send(request, bad_signature=True)).status == 401
    assert (await slack.send(request, stale=True)).status == 401
    assert (await slack.send(request, timestamp=int(time.time()) - 240)).status == 200  # 4 minutes is fine
    await api.wait_for(lambda: api.calls("chat.postMessage"))  # the handler posts after it records its run
    assert seen.runs == ["deploy"] and len(api.calls("chat.postMessage")) == 1


async def test_retry_is_delivered_with_its_headers(bolt: tuple[SlackEvents, Seen], api: SlackApiServer) -> None:
    slack, seen = bolt
    first = await slack.app_mention("hi")
    second = await slack.retry(first, num=2, reason="http_timeout")
    assert second.status == 200 and second.request.body == first.request.body
    assert second.signed.headers["X-Slack-Retry-Reason"] == "http_timeout"
    await api.wait_for(lambda: len(seen.runs) == 2)
    assert seen.retry_nums == [None, "2"]  # bolt does not deduplicate: the app has to


async def test_invalid_blocks_and_rate_limit_reach_the_sdk(bolt: tuple[SlackEvents, Seen], api: SlackApiServer) -> None:
    slack, seen = bolt
    resp = await slack.command("/post", "h" * 151)
    assert resp.text == "posting"  # acknowledged first: the handler posts after the ack
    await api.wait_for(lambda: len(seen.errors) == 1)  # that post answered before the limit is armed for the next
    api.rate_limit("chat.postMessage", retry_after=7)
    await slack.command("/post", "fine")
    await api.wait_for(lambda: len(seen.errors) == 2)
    assert seen.errors == [("invalid_blocks", 200, None), ("ratelimited", 429, "7")]
    assert "150 characters" in api.calls("chat.postMessage")[0].response["errors"][0]  # type: ignore[index]


async def test_slow_ack_raises_ack_timeout(bolt: tuple[SlackEvents, Seen]) -> None:
    slack, _ = bolt
    slack.ack_timeout = 0.3
    with pytest.raises(SlackAckTimeout):
        await slack.command("/slow")


async def test_url_verification(bolt: tuple[SlackEvents, Seen]) -> None:
    slack, _ = bolt
    resp = await slack.url_verification("abc123")
    assert resp.status == 200 and resp.json() == {"challenge": "abc123"}


async def test_aiohttp_adapter_via_serve_bolt_app(api: SlackApiServer) -> None:
    seen = Seen()
    async with serve_bolt_app(build_app(api, seen)) as url, SlackEvents(url, SECRET, api=api) as slack:
        assert url.endswith("/slack/events")
        await slack.command("/deploy", user="U2")
        card = await api.wait_for_message("C1")
        assert (await slack.click(card, "approve", user="U4")).status == 200
        assert (await slack.send(slack.payloads.command("/deploy"), stale=True)).status == 401
        await api.wait_for(lambda: card.edited)
    assert seen.runs == ["deploy", "approve"] and card.all_text().endswith("Approved by <@U4>")


async def test_rate_limit_retry_handler_recovers(api: SlackApiServer) -> None:
    client = AsyncWebClient(TOKEN, base_url=api.base_url, retry_handlers=[AsyncRateLimitErrorRetryHandler(1)])
    api.rate_limit(retry_after=0)
    resp = await client.chat_postMessage(channel="C1", text="after a 429")
    assert resp["ok"] and [c.status for c in api.calls()] == [429, 200]


# --- the sync App, in-process, with the server in its own thread ------------------------------------------------


@pytest.fixture
def threaded_api() -> Iterator[SlackApiServer]:
    with SlackApiServer(TOKEN, channels=["C1"]) as server:
        yield server


def test_sync_app_dispatch_with_signed_requests(threaded_api: SlackApiServer) -> None:
    api = threaded_api
    app = App(signing_secret=SECRET, client=WebClient(TOKEN, base_url=api.base_url), process_before_response=True)
    runs: list[str] = []

    @app.command("/deploy")
    def deploy(ack: Any, command: dict[str, Any], client: WebClient) -> None:
        ack()
        client.chat_postMessage(channel=command["channel_id"], text="Approve deploy?", blocks=CARD)

    @app.action("approve")
    def approve(ack: Any, body: dict[str, Any], client: WebClient) -> None:
        ack()
        runs.append(body["user"]["id"])
        client.chat_update(channel=body["channel"]["id"], ts=body["message"]["ts"], text="Approved", blocks=[])

    signer, payloads = SlackRequestSigner(SECRET), SlackPayloads(api=api)
    assert app.dispatch(BoltRequest(**signer.sign(payloads.command("/deploy")).bolt_kwargs())).status == 200
    card = api.messages("C1")[-1]
    tap = payloads.click(card, "approve", user="U9")
    assert app.dispatch(BoltRequest(**signer.sign(tap, bad_signature=True).bolt_kwargs())).status == 401
    assert app.dispatch(BoltRequest(**signer.sign(tap).bolt_kwargs())).status == 200
    api.wait_for_sync(lambda: card.edited)
    assert runs == ["U9"] and card.text == "Approved" and api.calls()[0].method == "auth.test"

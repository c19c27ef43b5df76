"""How SlackBot is run: behind an ASGI server (uvicorn), over Socket Mode (a local websocket endpoint speaking
Slack's envelope protocol), and what it says when it cannot run."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import uvicorn
from aiohttp import WSMsgType, web
from slack_sdk.web.async_client import AsyncWebClient

from milpa_chat.bots.slack import SlackBot
from milpa_chat.errors import MissingExtraError
from milpa_chat.testing import ManualClock, eventually
from milpa_chat.testing.slack import SlackApiServer, SlackEvents, SlackPayloads

from .conftest_slack import (
    ALICE,
    APPROVERS,
    MARIA,
    SECRET,
    TEAM,
    TOKEN,
    WORK,
    Tools,
    button,
    memory_assistant,
)

APP_TOKEN = "xapp-1-A0APP-test"


@pytest.fixture
async def api() -> AsyncIterator[SlackApiServer]:
    async with SlackApiServer(TOKEN, team_id=TEAM, channels={WORK: "work", APPROVERS: "approvers"}) as server:
        yield server


# --- ASGI ------------------------------------------------------------------------------------------------------


@asynccontextmanager
async def uvicorn_serving(asgi: Any) -> AsyncIterator[str]:
    """``asgi`` under uvicorn on a random local port, lifespan on; yields the events URL."""
    server = uvicorn.Server(uvicorn.Config(asgi, log_level="warning", lifespan="on"))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    task = asyncio.create_task(server.serve(sockets=[sock]))
    await eventually(lambda: server.started)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/slack/events"
    finally:
        server.should_exit = True
        await task


async def test_behind_uvicorn_the_asgi_app_serves_the_flows_and_runs_the_sweeper(api: SlackApiServer) -> None:
    tools, clock = Tools(), ManualClock()
    bot = SlackBot(memory_assistant(tools, clock), TOKEN, SECRET, api.base_url, sweep_interval=0.05)
    async with uvicorn_serving(bot.asgi) as url, SlackEvents(url, SECRET, api=api) as slack:
        resp = await slack.command("/milpa", "delete_note 3", user=ALICE, channel=WORK)
        card = await api.wait_for_message(WORK, lambda m: bool(m.buttons()))
        tap = await slack.click(card, button(card, "Confirm")["action_id"], user=ALICE)
        await api.wait_for(lambda: tools.deleted == [3] and not card.buttons())
        assert resp.status == 200 and tap.status == 200  # each within Slack's 3 s (SlackEvents raises past it)
        print(f"\nbehind uvicorn: command acknowledged in {resp.elapsed:.3f} s, tap in {tap.elapsed:.3f} s")
        forged = await slack.send(slack.payloads.command("/milpa", "delete_note 4", user=ALICE), bad_signature=True)
        assert forged.status == 401

        await slack.command("/milpa", "pay ACME 5", user=ALICE, channel=WORK)
        group = await api.wait_for_message(APPROVERS)
        clock.now += 601  # the sweeper started with the server's lifespan expires it
        await eventually(lambda: "Expired" in group.text)
    assert tools.deleted == [3] and tools.paid == []


# --- Socket Mode -------------------------------------------------------------------------------------------------


class SocketModeEndpoint:
    """Slack's side of Socket Mode on 127.0.0.1: ``apps.connections.open`` (app token only) hands out a websocket
    URL; over it, ``hello`` and then envelopes, each of which the app must acknowledge with its ``envelope_id``."""

    def __init__(self, app_token: str) -> None:
        self.app_token = app_token
        self.acks: dict[str, dict[str, Any]] = {}
        self.opened_with: list[str] = []
        self._ws: web.WebSocketResponse | None = None
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def __aenter__(self) -> SocketModeEndpoint:
        app = web.Application()
        app.router.add_post("/api/apps.connections.open", self._open)
        app.router.add_get("/link", self._link)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.base_url = f"http://127.0.0.1:{self._runner.addresses[0][1]}/api/"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _open(self, request: web.Request) -> web.Response:
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        self.opened_with.append(token)
        if token != self.app_token:
            return web.json_response({"ok": False, "error": "invalid_auth"})
        return web.json_response({"ok": True, "url": self.base_url.replace("http", "ws", 1).replace("/api/", "/link")})

    async def _link(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._ws = ws
        await ws.send_json({"type": "hello", "num_connections": 1, "connection_info": {"app_id": "A0APP"}})
        async for message in ws:
            if message.type == WSMsgType.TEXT:
                ack = json.loads(message.data)
                self.acks[ack["envelope_id"]] = ack
        return ws

    async def deliver(self, kind: str, payload: dict[str, Any], *, retry_attempt: int = 0) -> dict[str, Any]:
        """Send one envelope and return the app's acknowledgement (within Slack's 3 seconds)."""
        await eventually(lambda: self._ws is not None)
        assert self._ws is not None
        envelope_id = f"env-{next(self._ids)}"
        await self._ws.send_json(
            {
                "envelope_id": envelope_id,
                "type": kind,
                "payload": payload,
                "accepts_response_payload": kind != "events_api",
                "retry_attempt": retry_attempt,
                "retry_reason": "timeout" if retry_attempt else "",
            }
        )
        return await eventually(lambda: self.acks.get(envelope_id), timeout=3.0)


async def test_socket_mode_needs_no_signing_secret_and_runs_every_flow(api: SlackApiServer) -> None:
    tools = Tools()
    bot = SlackBot(memory_assistant(tools, ManualClock()), TOKEN, base_url=api.base_url, app_token=APP_TOKEN)
    payloads = SlackPayloads(api=api)
    async with SocketModeEndpoint(APP_TOKEN) as slack:
        handler = bot.socket_mode_handler(AsyncWebClient(base_url=slack.base_url))
        await handler.connect_async()
        try:
            await slack.deliver(
                "slash_commands", payloads.command("/milpa", "delete_note 5", user=ALICE, channel=WORK).payload
            )
            await bot.drain()
            card = api.messages(WORK)[-1]
            tap = payloads.click(card, button(card, "Confirm")["action_id"], user=ALICE).payload
            await slack.deliver("interactive", tap)
            await slack.deliver("interactive", tap, retry_attempt=1)  # delivered again: runs nothing twice
            mention = payloads.app_mention("hello", user=MARIA, channel=WORK).payload
            await slack.deliver("events_api", mention)
            await slack.deliver("events_api", mention, retry_attempt=1)
            await bot.drain()
        finally:
            await handler.close_async()
            await bot.close()
    assert slack.opened_with == [APP_TOKEN]
    assert tools.deleted == [5] and card.buttons() == [] and "Done" in card.text
    assert api.ephemeral_messages(ALICE) == []  # the retried tap was not answered "Already done."
    assert len([m for m in api.ephemeral_messages(MARIA) if "/milpa tools" in m.all_text()]) == 1  # one answer


# --- what it says when it cannot run -------------------------------------------------------------------------------


def test_missing_credentials_are_named_with_where_to_find_them() -> None:
    assistant = memory_assistant(Tools(), ManualClock())
    with pytest.raises(ValueError, match="bot_token: the Bot User OAuth Token"):
        SlackBot(assistant, "", SECRET)
    with pytest.raises(ValueError, match=r"needs signing_secret .* or app_token"):
        SlackBot(assistant, TOKEN)
    with pytest.raises(ValueError, match="starting with 'xapp-'"):
        SlackBot(assistant, TOKEN, app_token="xoxb-wrong")
    socket_only = SlackBot(assistant, TOKEN, app_token=APP_TOKEN)
    with pytest.raises(ValueError, match="HTTP mode needs signing_secret"):
        socket_only.web_app()
    with pytest.raises(ValueError, match="Socket Mode needs app_token"):
        SlackBot(assistant, TOKEN, SECRET).socket_mode_handler()


def test_without_the_slack_extra_the_error_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "slack_bolt", None)  # as if slack-bolt were not installed
    with pytest.raises(MissingExtraError, match=r'pip install "milpa-chat\[slack\]"'):
        SlackBot(memory_assistant(Tools(), ManualClock()), TOKEN, SECRET)


def test_importing_the_adapters_imports_no_slack_sdk() -> None:
    code = (
        "import sys, milpa_chat.bots, milpa_chat.bots.slack; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('slack_bolt', 'slack_sdk', 'aiohttp')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

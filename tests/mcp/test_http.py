"""The official MCP client over streamable HTTP (127.0.0.1), authenticated by bearer tokens; the approver
decides on Telegram (real python-telegram-bot against the local Bot API server) in the same process."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
import uvicorn
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from milpa_chat.bots import TelegramBot
from milpa_chat.mcp import BearerTokens, McpCaller, McpServer, token_digest
from milpa_chat.store import SqliteStore, Store
from milpa_chat.testing import BotApiServer
from tests.mcp.app import APPROVERS, build_assistant
from tests.mcp.support import (
    BOB,
    MARIA,
    asks_for_a_payment,
    calls_and_validates,
    learns_the_outcome,
    lists_tools_with_annotations,
    wire,
)

ALICE_TOKEN = "alice-desktop-token-5f1c"
READER_TOKEN = "reader-token-09ab"
TOKENS = BearerTokens(
    {
        ALICE_TOKEN: McpCaller("mcp:alice", ("notes:read", "notes:write", "payments:send"), "Alice (desktop)"),
        token_digest(READER_TOKEN): McpCaller("mcp:reader", ("notes:read",)),  # configured by digest only
    }
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Running:
    url: str
    server: BotApiServer
    store: Store


@asynccontextmanager
async def running(tmp_path: Path) -> AsyncIterator[Running]:
    """A Telegram bot and an MCP HTTP server on one registry (one SQLite store), in this process."""
    store = SqliteStore(tmp_path / "shared.db")
    async with BotApiServer() as api:
        api.group(APPROVERS, "Approvers", members=[MARIA, BOB])
        assistant = build_assistant(store)
        bot = TelegramBot(assistant, api.token, api.base_url, sweep_interval=None)
        await bot.start(poll_timeout=1)
        port = free_port()
        mcp = McpServer(assistant.registry, tokens=TOKENS)
        web = uvicorn.Server(
            uvicorn.Config(mcp.http_app(port=port), host="127.0.0.1", port=port, log_level="warning", lifespan="on")
        )
        serving = asyncio.ensure_future(web.serve())
        try:
            while not web.started:
                assert not serving.done(), "the MCP HTTP server did not start"
                await asyncio.sleep(0.02)
            yield Running(f"http://127.0.0.1:{port}/mcp", api, store)
        finally:
            web.should_exit = True
            await serving
            await bot.stop()
            await store.close()


@asynccontextmanager
async def session(url: str, token: str) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        yield client


async def test_http_client_lists_calls_and_gets_an_approval_decided_on_telegram(tmp_path: Path) -> None:
    async with running(tmp_path) as r, session(r.url, ALICE_TOKEN) as client:
        await lists_tools_with_annotations(client)
        await calls_and_validates(client)
        approval_id, card = await asks_for_a_payment(client, r.server)
        assert "Alice (desktop)" in (card.text or "")  # the requester, as the token's configuration names them
        await learns_the_outcome(client, r.server, approval_id, card, r.store)


async def test_each_token_is_its_own_caller(tmp_path: Path) -> None:
    async with running(tmp_path) as r:
        async with session(r.url, READER_TOKEN) as reader:
            names = {t.name for t in (await reader.list_tools()).tools}
            assert {"list_notes", "notes_count"} <= names and "send_payment" not in names  # scopes decide
            denied = wire(await reader.call_tool("send_payment", {"to": "ME", "amount": 1}))
            assert denied["isError"] is True and "payments:send" in denied["content"][0]["text"]
        async with session(r.url, ALICE_TOKEN) as alice:
            asked = wire(await alice.call_tool("send_payment", {"to": "ACME", "amount": 5}))
            approval_id = asked["structuredContent"]["approval"]["approval_id"]
        async with session(r.url, READER_TOKEN) as reader:  # another caller learns nothing of it
            foreign = wire(await reader.call_tool("approval_status", {"approval_id": approval_id}))
            assert foreign["isError"] is True and "Unknown approval" in foreign["content"][0]["text"]
            assert wire(await reader.call_tool("approval_run", {"approval_id": approval_id}))["isError"] is True
        assert await r.store.read("payments") == []


async def test_requests_without_a_known_bearer_token_are_refused(tmp_path: Path) -> None:
    async with running(tmp_path) as r, httpx2.AsyncClient() as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        headers = {"Accept": "application/json, text/event-stream"}
        assert (await http.post(r.url, json=body, headers=headers)).status_code == 401
        wrong = {**headers, "Authorization": "Bearer not-a-token"}
        assert (await http.post(r.url, json=body, headers=wrong)).status_code == 401

"""The proxy tests' rig: the upstream (``tests.mcp.upstream``, its own process, over stdio or streamable HTTP),
the kit's proxy in front of it (served over streamable HTTP on 127.0.0.1 with a bearer token), and the
approvers' Telegram group (real python-telegram-bot against the local Bot API server)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import httpx2
import uvicorn
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from milpa_chat import ToolRegistry
from milpa_chat.bots import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.mcp import BearerTokens, McpCaller
from milpa_chat.mcp.proxy import McpProxy
from milpa_chat.mcp.proxy_config import ProxyConfig
from milpa_chat.standing import GrantDesk
from milpa_chat.store import SqliteStore
from milpa_chat.testing import BotApiServer, TelegramMessage, TelegramUser

ROOT = Path(__file__).resolve().parents[2]
APPROVERS = -700
MARIA = TelegramUser(2001, "Maria", "maria")
MATEO = TelegramUser(2002, "Mateo", "mateo")
IDENTITIES: dict[str, Any] = {
    "roles": {"manager": ["notes:approve", "grants:sign"]},
    "users": {"telegram:2001": ["manager"], "telegram:2002": ["manager"]},
    "approvers": {"telegram": [str(APPROVERS)]},
}
TOKEN = "alice-proxy-token-3e9d"
CALLER = McpCaller("mcp:alice", ("notes:use",), "Alice (desktop)")
GATED = {"verify": {"approver_scopes": ["notes:approve"]}, "wait_seconds": 30}
WAIT = 20.0


def _devnull() -> TextIO:
    return open(os.devnull, "w")  # closed by the caller's with; the upstream's log lines stay out of the output


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def upstream_entry(kind: str, calls: Path, port: int | None = None, **more: Any) -> dict[str, Any]:
    """The ``[[upstream]]`` table of the test upstream: destructive tools decided by an approver."""
    entry: dict[str, Any] = {
        "name": "notes",
        "prefix": "notes_",
        "scopes": ["notes:use"],
        "timeout": 20,
        "tools": {"delete_note": GATED, "slow_delete": GATED},
    }
    if kind == "stdio":
        entry.update(
            command=sys.executable,
            args=["-m", "tests.mcp.upstream", str(calls)],
            cwd=str(ROOT),
            env={"PYTHONPATH": str(ROOT)},
        )
    else:
        entry.update(url=f"http://127.0.0.1:{port}/mcp")
    entry.update(more)
    return entry


def calls(path: Path, tool: str | None = None) -> list[dict[str, Any]]:
    """What the upstream received (one entry per ``tools/call``), optionally of one tool only."""
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if tool is None or r["tool"] == tool]


@asynccontextmanager
async def http_upstream(calls_file: Path) -> AsyncIterator[int]:
    """The upstream as a streamable-HTTP server in its own process; its port."""
    port = free_port()
    with _devnull() as quiet:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.mcp.upstream",
            str(calls_file),
            "--http",
            str(port),
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=quiet,
            stderr=quiet,
        )
        try:
            for _ in range(300):
                try:
                    _, writer = await asyncio.open_connection("127.0.0.1", port)
                    writer.close()
                    break
                except OSError:
                    assert proc.returncode is None, "the upstream HTTP server did not start"
                    await asyncio.sleep(0.05)
            yield port
        finally:
            if proc.returncode is None:
                proc.kill()
            await proc.wait()


@dataclass
class Rig:
    url: str
    api: BotApiServer
    proxy: McpProxy
    calls_file: Path
    store: SqliteStore
    upstream_url: str | None = None

    def calls(self, tool: str | None = None) -> list[dict[str, Any]]:
        return calls(self.calls_file, tool)


@asynccontextmanager
async def served(proxy: McpProxy) -> AsyncIterator[str]:
    """The proxy's McpServer over streamable HTTP on 127.0.0.1; its URL."""
    port = free_port()
    server = proxy.server(tokens=BearerTokens({TOKEN: CALLER}))
    web = uvicorn.Server(
        uvicorn.Config(server.http_app(port=port), host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    task = asyncio.ensure_future(web.serve())
    try:
        while not web.started:
            assert not task.done(), "the proxy's HTTP server did not start"
            await asyncio.sleep(0.02)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        web.should_exit = True
        await task


@asynccontextmanager
async def rig(tmp_path: Path, kind: str = "stdio", *, grants: bool = False, **upstream: Any) -> AsyncIterator[Rig]:
    """Upstream, proxy, approvers' Telegram bot; the proxy's tools on one SQLite store."""
    calls_file = tmp_path / "calls.jsonl"
    store = SqliteStore(tmp_path / "proxy.db")
    async with BotApiServer() as api, http_upstream(calls_file) if kind == "http" else _no_port() as port:
        api.group(APPROVERS, "Approvers", members=[MARIA, MATEO])
        config = ProxyConfig.from_mapping({"upstream": [upstream_entry(kind, calls_file, port, **upstream)]})
        registry = ToolRegistry(store=store, approval_handoff=0.0)
        if grants:
            GrantDesk(registry)  # registry.grants: judged before an approval is opened
        assistant = Assistant(registry, Identities.from_dict(IDENTITIES), name="Proxy approvals", edits=True)
        bot = TelegramBot(assistant, api.token, api.base_url, sweep_interval=None)
        await bot.start(poll_timeout=1)
        with _devnull() as quiet:
            proxy = McpProxy(config, registry, errlog=quiet)
            try:
                await proxy.start()
                async with served(proxy) as url:
                    direct = None if port is None else f"http://127.0.0.1:{port}/mcp"
                    yield Rig(url, api, proxy, calls_file, store, direct)
            finally:
                await proxy.close()
                await bot.stop()
                await store.close()


@asynccontextmanager
async def _no_port() -> AsyncIterator[None]:
    yield None


@asynccontextmanager
async def client(url: str, token: str = TOKEN, message_handler: Any = None) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, message_handler=message_handler) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def direct_client(url: str) -> AsyncIterator[ClientSession]:
    """A client of the upstream itself (no proxy, no token)."""
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def button(api: BotApiServer, card: TelegramMessage, word: str) -> str:
    now = api.message(card.chat.id, card.message_id)
    return next(label for label in now.button_labels if word.lower() in label.lower())


async def tap(api: BotApiServer, card: TelegramMessage, word: str, user: TelegramUser) -> str:
    update = await api.tap_button(card, button(api, card, word), user)
    query = api.callback_query(update)
    await api.wait_until(lambda: query.answered, WAIT, what="the tap's answer")
    return query.answer_text or ""

"""The official MCP client over stdio: the server is a subprocess (``python -m milpa_chat.mcp``) on a SQLite
file it shares with this process's Telegram bot (real python-telegram-bot, local Bot API server)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import mcp.types as mcp_types
from mcp import ClientSession, StdioServerParameters, stdio_client

from milpa_chat.bots import TelegramBot
from milpa_chat.store import SqliteStore
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

ROOT = Path(__file__).resolve().parents[2]


def _devnull() -> TextIO:
    return open(os.devnull, "w")  # closed by the caller's with


@asynccontextmanager
async def spawned(args: list[str], env: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "milpa_chat.mcp", *args],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), **(env or {})},
    )
    with _devnull() as quiet:  # the server's log lines (audit warnings) stay out of the test output
        async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            yield client


async def test_stdio_client_gets_an_approval_decided_on_telegram_through_a_shared_sqlite_file(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    store = SqliteStore(db)
    async with BotApiServer() as api:
        api.group(APPROVERS, "Approvers", members=[MARIA, BOB])
        bot = TelegramBot(build_assistant(store), api.token, api.base_url, sweep_interval=None)
        await bot.start(poll_timeout=1)  # this process takes the taps; the MCP process sends its own cards
        env = {"MILPA_TEST_MCP_DB": str(db), "MILPA_TEST_BOT_URL": api.base_url, "MILPA_TEST_BOT_TOKEN": api.token}
        try:
            async with spawned(["--tools", "tests.mcp.app:stdio_server"], env) as client:
                await lists_tools_with_annotations(client)
                await calls_and_validates(client)
                approval_id, card = await asks_for_a_payment(client, api)
                assert "Requested by: stdio" in (card.text or "")
                await learns_the_outcome(client, api, approval_id, card, store)
        finally:
            await bot.stop()
            await store.close()


async def test_stdio_confirm_tool_is_never_confirmed_by_the_client_alone() -> None:
    """A client without elicitation (and no chat for its person) cannot confirm: approval_run refuses."""
    async with spawned(["--tools", "tests.mcp.app:registry"]) as client:
        asked = wire(await client.call_tool("delete_note", {"note_id": 2}))
        approval = asked["structuredContent"]["approval"]
        assert approval["kind"] == "confirm" and approval["shown_to"] == []
        assert "Only you (the person) can confirm this" in approval["next"]
        refused = wire(await client.call_tool("approval_run", {"approval_id": approval["approval_id"]}))
        assert refused["isError"] is True and "does not support MCP elicitation" in refused["content"][0]["text"]
        forged = wire(await client.call_tool("delete_note", {"confirm_token": approval["approval_id"]}))
        assert forged["isError"] is True and "only a person confirms" in forged["content"][0]["text"]
        listed = wire(await client.call_tool("list_notes", {}))
        assert "call mom" in listed["structuredContent"]["notes"]  # nothing ran


async def test_stdio_confirm_tool_asks_the_person_behind_the_client_through_elicitation() -> None:
    asked: list[str] = []

    async def person(context: Any, params: Any) -> Any:
        asked.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"confirm": True})

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "milpa_chat.mcp", "--tools", "tests.mcp.app:registry"],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT)},
    )
    with _devnull() as quiet:
        async with (
            stdio_client(params, errlog=quiet) as (read, write),
            ClientSession(read, write, elicitation_callback=person) as client,
        ):
            await client.initialize()
            done = wire(await client.call_tool("delete_note", {"note_id": 2}))
            assert done["structuredContent"] == {"result": "Deleted note 2 (call mom)."}, done
            assert len(asked) == 1 and "note_id = 2" in asked[0] and "Digest: " in asked[0]
            listed = wire(await client.call_tool("list_notes", {}))
            assert listed["structuredContent"]["notes"] == ["buy milk", "water the plants"]


async def test_stdio_caller_scopes_come_from_the_command_line() -> None:
    async with spawned(
        ["--tools", "tests.mcp.app:registry", "--principal", "mcp:kiosk", "--scopes", "notes:read"]
    ) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "list_notes" in names and "delete_note" not in names
        denied = wire(await client.call_tool("delete_note", {"note_id": 1}))
        assert denied["isError"] is True and "notes:write" in denied["content"][0]["text"]


def test_the_cli_runs_the_server_and_refuses_http_without_tokens() -> None:
    cli = "from milpa_chat.cli import main; raise SystemExit(main())"  # what the milpa-chat script runs
    run = subprocess.run(
        [sys.executable, "-c", cli, "mcp", "--tools", "tests.mcp.app:registry", "--http", "8999"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert "--http needs --tokens FILE" in run.stderr

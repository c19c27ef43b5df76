"""An MCP client is a model: a confirm request it opens is confirmed by the person behind it, through MCP
elicitation (the official SDK's ClientSession with an elicitation callback) or on a card in that person's
Telegram chat (``[people]`` in the identities; real python-telegram-bot against the local Bot API server).
The client itself never confirms, approves or redeems anything."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import httpx2
import mcp.types as mcp_types
import uvicorn
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from milpa_chat import ToolRegistry
from milpa_chat.bots import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.mcp import BearerTokens, McpCaller, McpServer
from milpa_chat.store import SqliteStore
from milpa_chat.testing import BotApiServer, TelegramUser
from tests.mcp.app import APPROVERS, IDENTITIES, NoteTools
from tests.mcp.support import MARIA, wire
from tests.mcp.test_http import free_port

ALICE = TelegramUser(1001, "Alice", "alice")
TOKEN = "alice-laptop-token-77c1"
CALLER = McpCaller("mcp:alice-laptop", ("notes:read", "notes:write", "payments:send"), "Alice (laptop)")
PEOPLE = {
    **IDENTITIES,
    "users": {**IDENTITIES["users"], "telegram:1001": ["notes:read", "notes:write"]},
    "people": {"mcp:alice-laptop": "telegram:1001"},
}


@asynccontextmanager
async def serving(
    tmp_path: Path, *, people: bool, confirm_approvers: tuple[str, ...] = ()
) -> AsyncIterator[tuple[str, BotApiServer, NoteTools]]:
    store = SqliteStore(tmp_path / "mcp.db")
    async with BotApiServer() as api:
        api.group(APPROVERS, "Approvers", members=[MARIA])
        api.private_chat(ALICE)  # Alice has started the bot
        identities = Identities.from_dict(PEOPLE)
        registry = ToolRegistry(store=store, approval_handoff=0.0)
        notes = NoteTools(store)
        registry.scan(notes)
        assistant = Assistant(registry, identities, name="MCP test assistant")
        bot = TelegramBot(assistant, api.token, api.base_url, sweep_interval=None)
        await bot.start(poll_timeout=1)
        port = free_port()
        server = McpServer(
            registry,
            tokens=BearerTokens({TOKEN: CALLER}),
            people=identities if people else None,
            confirm_approvers=confirm_approvers,
        )
        web = uvicorn.Server(
            uvicorn.Config(server.http_app(port=port), host="127.0.0.1", port=port, log_level="warning", lifespan="on")
        )
        task = asyncio.ensure_future(web.serve())
        try:
            while not web.started:
                assert not task.done(), "the MCP HTTP server did not start"
                await asyncio.sleep(0.02)
            yield f"http://127.0.0.1:{port}/mcp", api, notes
        finally:
            web.should_exit = True
            await task
            await bot.stop()
            await store.close()


@asynccontextmanager
async def client(url: str, elicit: Any = None) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, elicitation_callback=elicit) if elicit else ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def test_the_person_confirms_or_declines_through_elicitation(tmp_path: Path) -> None:
    answers: Iterator[tuple[Literal["accept", "decline", "cancel"], dict[str, Any] | None]] = iter(
        [("accept", {"confirm": True}), ("decline", None), ("cancel", None)]
    )
    asked: list[str] = []

    async def person(context: Any, params: Any) -> Any:
        asked.append(params.message)
        action, content = next(answers)
        return mcp_types.ElicitResult(action=action, content=content)

    async with serving(tmp_path, people=False) as (url, _api, notes), client(url, person) as session:
        done = wire(await session.call_tool("delete_note", {"note_id": 1}))
        assert done["structuredContent"] == {"result": "Deleted note 1 (buy milk)."}
        assert "note_id = 1" in asked[0] and "Digest: " in asked[0] and len(asked) == 1
        declined = wire(await session.call_tool("delete_note", {"note_id": 1}))
        assert "Cancelled" in declined["content"][0]["text"]
        dismissed = wire(await session.call_tool("delete_note", {"note_id": 1}))
        assert dismissed["isError"] is True and "still waiting" in dismissed["content"][0]["text"]
        assert notes.notes == ["call mom", "water the plants"]  # one delete ran, once


async def test_without_elicitation_the_card_goes_to_the_persons_chat_and_their_tap_runs_it(tmp_path: Path) -> None:
    async with serving(tmp_path, people=True) as (url, api, notes), client(url) as session:
        asked = wire(await session.call_tool("delete_note", {"note_id": 2}))
        approval = asked["structuredContent"]["approval"]
        card = await api.wait_for_message(ALICE.id)
        assert "delete_note" in (card.text or "") and any("Confirm" in b for b in card.button_labels)
        tries = [
            ("approval_run", {"approval_id": approval["approval_id"]}),
            ("delete_note", {"confirm_token": approval["approval_id"]}),
            ("delete_note", {"note_id": 2, "verification_id": approval["approval_id"]}),
            ("resolve_verification", {"request_id": approval["approval_id"], "decision": "grant"}),
        ]
        lifted = 0
        for name, args in tries:
            answer = wire(await session.call_tool(name, args))
            lifted += not answer.get("isError")
        print(f"\n{len(tries)} MCP client attempts to confirm its own request -> {lifted} lifted")
        assert lifted == 0 and notes.notes == ["buy milk", "call mom", "water the plants"]
        confirm = next(label for label in card.button_labels if "Confirm" in label)
        await api.tap_button(card, confirm, ALICE)
        status = wire(
            await session.call_tool("approval_status", {"approval_id": approval["approval_id"], "wait_seconds": 10})
        )
        for _ in range(50):
            if status["structuredContent"]["state"] == "executed":
                break
            status = wire(
                await session.call_tool("approval_status", {"approval_id": approval["approval_id"], "wait_seconds": 1})
            )
        assert status["structuredContent"]["state"] == "executed"
        assert status["structuredContent"]["decided_by"] == "Alice"
        assert notes.notes == ["buy milk", "water the plants"]


async def test_a_client_nobody_can_ask_has_its_confirm_requests_decided_by_approvers(tmp_path: Path) -> None:
    async with (
        serving(tmp_path, people=False, confirm_approvers=("payments:approve",)) as (url, api, notes),
        client(url) as session,
    ):
        asked = wire(await session.call_tool("delete_note", {"note_id": 3}))
        approval = asked["structuredContent"]["approval"]
        assert approval["kind"] == "verification" and approval["state"] == "pending"
        early = wire(await session.call_tool("approval_run", {"approval_id": approval["approval_id"]}))
        assert early["isError"] is True and notes.notes == ["buy milk", "call mom", "water the plants"]
        card = await api.wait_for_message(APPROVERS)
        assert "delete_note" in (card.text or "")
        approve = next(label for label in card.button_labels if "Approve" in label)
        await api.tap_button(card, approve, MARIA)
        status = wire(
            await session.call_tool("approval_status", {"approval_id": approval["approval_id"], "wait_seconds": 10})
        )
        assert status["structuredContent"]["state"] == "approved", status
        ran = wire(await session.call_tool("approval_run", {"approval_id": approval["approval_id"]}))
        again = wire(await session.call_tool("approval_run", {"approval_id": approval["approval_id"]}))
        deleted = {"result": "Deleted note 3 (water the plants)."}
        assert ran["structuredContent"] == again["structuredContent"] == deleted
        assert notes.notes == ["buy milk", "call mom"]  # run once

"""The bot's command menu: ``setMyCommands`` per scope from the registry, through the real PTB and the local Bot API."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from milpa_chat import ToolRegistry, tool
from milpa_chat.bots import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.command import (
    Authority,
    EffectProfile,
    Externality,
    Mutation,
    Operation,
    RegistryProjector,
    Reversibility,
    Subject,
)
from milpa_chat.store import MemoryStore
from milpa_chat.testing import BotApiServer

from .telegram_support import ALICE, APPROVERS, BOB, EVE, MARIA, running_bot

BUILTINS = ["tools", "help"]
WRITER = [*BUILTINS, "list_notes", "search_notes", "delete_note", "send_payment", "slow_report"]
MANAGER = [*BUILTINS, "list_notes", "search_notes", "slow_report"]


def names(commands: list[dict[str, str]]) -> list[str]:
    return [c["command"] for c in commands]


def chat(chat_id: int) -> dict[str, Any]:
    return {"type": "chat", "chat_id": chat_id}


def member(chat_id: int, user_id: int) -> dict[str, Any]:
    return {"type": "chat_member", "chat_id": chat_id, "user_id": user_id}


async def test_each_scope_gets_the_commands_its_people_may_call() -> None:
    async with running_bot() as h:
        server = h.server
        assert names(server.commands()) == BUILTINS  # the default scopes call no tool
        assert names(server.commands(scope=chat(ALICE.id))) == WRITER
        assert names(server.commands(scope=chat(BOB.id))) == WRITER
        assert names(server.commands(scope=chat(MARIA.id))) == MANAGER
        assert server.commands(scope=chat(EVE.id)) == []  # not in the identities: the default menu applies
        # the approvers' group: its own scopes are the default ones, each listed member gets theirs there
        assert server.commands(scope=chat(APPROVERS)) == []
        assert names(server.commands(scope=member(APPROVERS, MARIA.id))) == MANAGER
        assert names(server.commands(scope=member(APPROVERS, ALICE.id))) == WRITER
        listing = {c["command"]: c["description"] for c in server.commands(scope=chat(ALICE.id))}
        assert listing["delete_note"] == "Delete a note by its number"
        every = [c["command"] for menu in server.state.commands.values() for c in menu]
        assert "resolve_verification" not in every and "request_verification" not in every

        reply = await h.say(ALICE, "/list_notes")  # what the menu offers runs
        assert "note" in (reply.text or "").lower()


def archive(values: dict[str, Any]) -> dict[str, Any]:
    return {"archived": values["note_id"]}


ARCHIVE = Operation(
    "notes:archive",
    "Archive a note.\nIt stays searchable.",
    archive,
    input_schema={"type": "object", "required": ["note_id"], "properties": {"note_id": {"type": "integer"}}},
    effects=EffectProfile(
        Mutation.PERSISTENT,
        Externality.NONE,
        Reversibility.COMPENSATABLE,
        Authority.WRITE_AS_USER,
        subject=Subject.DATA,
    ),
    scopes=["notes:write"],
)
CLI_ONLY = Operation("notes:vacuum", "Compact the notes file.", lambda: {"ok": True}, mutating=True,
                     effects=EffectProfile.unclassified(), surfaces=["tools", "cli"])  # fmt: skip


class Odd:
    @tool("Export-CSV", "Export the notes as CSV", scopes=["notes:read"], mutating=False)
    def export(self) -> str:
        return "id,title"

    @tool("count_notes", "Count the notes " + "very " * 80 + "carefully", mutating=False)
    def count(self) -> int:
        return 3


@asynccontextmanager
async def bot_for(registry: ToolRegistry, identities: Identities) -> AsyncIterator[tuple[BotApiServer, TelegramBot]]:
    async with BotApiServer() as server:
        bot = TelegramBot(Assistant(registry, identities), server.token, server.base_url, sweep_interval=None)
        try:
            yield server, bot
        finally:
            await bot.stop()


async def test_operations_are_in_the_menu_and_names_telegram_refuses_are_left_out_with_a_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = ToolRegistry(store=MemoryStore())
    registry.scan(Odd())
    RegistryProjector(registry).register(ARCHIVE, CLI_ONLY)
    identities = Identities(
        users={"telegram:1001": ["notes:read", "notes:write"]},
        chats={f"telegram:{APPROVERS}": ["notes:write"]},
        approvers={"telegram": [str(APPROVERS)]},
    )
    async with bot_for(registry, identities) as (server, bot):
        with caplog.at_level(logging.INFO, logger="milpa_chat.command"):
            await bot.start(poll_timeout=1)
        default = server.commands()
        assert names(default) == [*BUILTINS, "count_notes"]
        assert len(default[2]["description"]) == 256 and default[2]["description"].endswith("…")
        alice = server.commands(scope=chat(ALICE.id))
        assert names(alice) == [*BUILTINS, "count_notes", "notes_archive"]  # no Export-CSV, no notes_vacuum
        assert alice[3]["description"] == "Archive a note. It stays searchable."
        assert names(server.commands(scope=chat(APPROVERS))) == [*BUILTINS, "count_notes", "notes_archive"]
        assert server.commands(scope=member(APPROVERS, ALICE.id)) == []  # the same as the chat's: not set
        assert "'Export-CSV' is left out of the Telegram command menu" in caplog.text
        assert caplog.text.count("Export-CSV") == 1  # said once, not once per scope
        # left out of the menu, still callable another way
        assert (await registry.call("Export-CSV", {}, registry_ctx())).data == "id,title"


def registry_ctx() -> Any:
    from milpa_chat import ToolContext

    return ToolContext.telegram(chat_id=ALICE.id, user_id=ALICE.id, scopes=["notes:read"])


class Reader:
    @tool("read_csv", "Read the notes as CSV", scopes=["notes:read"], mutating=False)
    def read(self) -> str:
        return "id,title"


async def test_the_menu_follows_the_identities_and_can_be_left_alone() -> None:
    registry = ToolRegistry(store=MemoryStore())
    registry.scan(Reader())
    async with bot_for(registry, Identities(users={"telegram:1001": ["notes:read"]})) as (server, bot):
        await bot.start(polling=False)
        assert names(server.commands()) == BUILTINS
        assert names(server.commands(scope=chat(ALICE.id))) == [*BUILTINS, "read_csv"]
        bot.assistant.identities = Identities(users={"telegram:1001": ["notes:read"]}, default_scopes=["notes:read"])
        assert await bot.sync_commands() == 1  # the default; Alice's menu now equals it, so hers is deleted
        assert server.commands(scope=chat(ALICE.id)) == []
        assert names(server.commands()) == [*BUILTINS, "read_csv"]

    async with BotApiServer() as server:
        quiet = TelegramBot(
            Assistant(registry, Identities()), server.token, server.base_url, sweep_interval=None, command_menu=False
        )
        await quiet.start(poll_timeout=1)
        await quiet.stop()
        assert server.commands() == [] and not [c for c in server.calls if c.method.lower() == "setmycommands"]


async def test_a_refused_menu_is_logged_and_the_bot_still_starts_and_serves(caplog: pytest.LogCaptureFixture) -> None:
    registry = ToolRegistry(store=MemoryStore())
    registry.scan(Reader())
    identities = Identities(users={"telegram:1001": ["notes:read"], "telegram:2001": ["notes:read"]})
    async with bot_for(registry, identities) as (server, bot):
        server.arm_error("setMyCommands", 400, "Bad Request: chat not found", times=1)  # the default scope's call
        with caplog.at_level(logging.WARNING, logger="milpa_chat.bots.telegram"):
            await bot.start(poll_timeout=1)
        assert "Could not set the Telegram command menu of the default scope: BadRequest" in caplog.text
        assert "Chat not found" in caplog.text
        assert server.commands() == []  # refused
        assert names(server.commands(scope=chat(MARIA.id))) == [*BUILTINS, "read_csv"]  # the next ones were set
        update = await server.send_message(ALICE.id, ALICE, "/read_csv")
        reply = await server.wait_for_message(ALICE.id, since=update, timeout=15)
        assert "id,title" in (reply.text or "")

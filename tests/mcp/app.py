"""The tools the MCP tests serve, and the servers built on them (also spawned as ``--tools tests.mcp.app:...``).

* ``list_notes`` reads (``@tool(mutating=False)``), with an output schema from its return type;
* ``delete_note`` mutates and is confirmed by the requester (``confirm=True``);
* ``send_payment`` needs a manager's approval (``verify=``), and records every payment it sends;
* ``notes_archive`` / ``notes_count`` are declared :mod:`milpa_chat.command` operations: their
  annotations come from their effect profiles.

``stdio_server()`` is what the stdio test spawns: a registry on the SQLite file named by
``MILPA_TEST_MCP_DB`` with a chat :class:`Assistant` whose Telegram bot (PTB, against the test's
local Bot API server at ``MILPA_TEST_BOT_URL``) shows the approval cards it opens.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated, Any

from typing_extensions import TypedDict

from milpa_chat import Param, ToolRegistry, ToolResult, tool
from milpa_chat.chat import Assistant, Identities
from milpa_chat.command import (
    Because,
    Externality,
    Mutates,
    Mutation,
    Needs,
    Reads,
    RegistryProjector,
    Reversibility,
    Subject,
    operation,
)
from milpa_chat.runtime import VerifyPolicy
from milpa_chat.store import SqliteStore, Store

APPROVERS = -500
IDENTITIES: dict[str, Any] = {
    "roles": {"manager": ["payments:approve"]},
    "users": {"telegram:2001": ["manager"], "telegram:1002": []},
    "defaults": {"scopes": []},
    "approvers": {"telegram": [str(APPROVERS)]},
}


class Listing(TypedDict):
    notes: list[str]
    page: int


class NoteTools:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.notes = ["buy milk", "call mom", "water the plants"]

    @tool("list_notes", "List the saved notes", scopes=["notes:read"], mutating=False)
    def list_notes(self, page: Annotated[int, Param("Page number", clamp=(1, 100))] = 1) -> Listing:
        return {"notes": self.notes, "page": page}

    @tool("delete_note", "Delete a note by its number", scopes=["notes:write"], mutating=True, confirm=True)
    def delete_note(self, note_id: Annotated[int, Param("The note's number")]) -> str:
        removed = self.notes.pop(note_id - 1)
        return f"Deleted note {note_id} ({removed})."

    @tool(
        "send_payment",
        "Send a payment; a manager must approve it",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",), expires_in=3600),
    )
    async def send_payment(self, to: Annotated[str, Param("Who is paid")], amount: float) -> ToolResult:
        await self.store.append("payments", {"to": to, "amount": amount})
        return ToolResult.success({"to": to, "amount": amount}, f"Paid {amount:.2f} EUR to {to}.")


@dataclass
class Archived:
    note: str


@operation("notes:archive", "Archive a note (it can be restored).")
@Mutates(Mutation.PERSISTENT, Externality.NONE, Reversibility.COMPENSATABLE, subject=Subject.DATA)
@Needs(scopes=["notes:write"])
class ArchiveNote:
    def __init__(self, note: Annotated[str, Because("the note's text")]) -> None:
        self.note = note

    def run(self) -> Archived:
        return Archived(self.note)


@dataclass
class Count:
    count: int


@operation("notes:count", "Count the notes.")
@Reads
@Needs(scopes=["notes:read"])
class CountNotes:
    def __init__(self) -> None:
        pass

    def run(self) -> Count:
        return Count(3)


def build_registry(store: Store) -> ToolRegistry:
    registry = ToolRegistry(store=store, approval_handoff=0.0)
    registry.scan(NoteTools(store))
    RegistryProjector(registry).register(ArchiveNote, CountNotes)
    return registry


def registry() -> ToolRegistry:
    """``--tools tests.mcp.app:registry``: the tools on an in-memory store (no chat)."""
    from milpa_chat.store import MemoryStore

    return build_registry(MemoryStore())


def build_assistant(store: Store) -> Assistant:
    return Assistant(build_registry(store), Identities.from_dict(IDENTITIES), name="MCP test assistant")


def stdio_server() -> Any:
    """The stdio test's server: a registry on a shared SQLite file, cards sent by a non-polling bot."""
    from milpa_chat.bots import TelegramBot
    from milpa_chat.mcp import McpServer

    store = SqliteStore(os.environ["MILPA_TEST_MCP_DB"])
    assistant = build_assistant(store)
    bot = TelegramBot(
        assistant, os.environ["MILPA_TEST_BOT_TOKEN"], os.environ["MILPA_TEST_BOT_URL"], sweep_interval=None
    )

    @contextlib.asynccontextmanager
    async def cards_sender() -> AsyncIterator[None]:
        await bot.start(polling=False)  # sends and edits this process's cards; taps reach the polling bot
        try:
            yield
        finally:
            await bot.stop()
            await store.close()

    return McpServer(assistant.registry, lifespan=cards_sender)

from __future__ import annotations

import threading
from typing import Annotated, Any

import pytest

from milpa_chat import Param, ToolContext, ToolRegistry, ToolResult, tool
from milpa_chat.store import MemoryStore


class Clock:
    """A controllable clock for expiry tests."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class NoteTools:
    def __init__(self) -> None:
        self.notes: dict[int, str] = {1: "buy milk", 2: "call mom"}
        self.deleted: list[int] = []
        self.threads: list[str] = []

    @tool("list_notes", "List saved notes", scopes=["notes:read"], mutating=False)
    def list_notes(self, page: Annotated[int, Param("Page number", clamp=(1, 1000))] = 1) -> ToolResult:
        self.threads.append(threading.current_thread().name)
        return ToolResult.success({"notes": list(self.notes.values()), "page": page})

    @tool("delete_note", "Delete a note", scopes=["notes:write"], mutating=True, confirm=True)
    async def delete_note(self, note_id: int) -> dict[str, Any]:
        self.deleted.append(note_id)
        self.threads.append(threading.current_thread().name)
        return {"deleted": note_id}

    @tool("archive_note", "Archive a note (mutating, no explicit confirm)", scopes=["notes:write"], mutating=True)
    async def archive_note(self, note_id: int) -> dict[str, Any]:
        return {"archived": note_id}

    @tool("boom", "Always fails", mutating=False)
    def boom(self, password: str = "x") -> None:
        raise RuntimeError("database password is hunter2")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def notes() -> NoteTools:
    return NoteTools()


@pytest.fixture
def registry(notes: NoteTools, clock: Clock) -> ToolRegistry:
    reg = ToolRegistry(store=MemoryStore(clock=clock))
    reg.scan(notes)
    return reg


@pytest.fixture
def writer() -> ToolContext:
    return ToolContext.mcp("req-1", "agent:writer", ["notes:read", "notes:write"])

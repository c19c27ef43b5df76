from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pytest

from milpa_chat import Param, ToolRegistry, ToolResult, VerifyPolicy, tool
from milpa_chat.chat import Assistant, ChatUser, Identities
from milpa_chat.store import MemoryStore
from milpa_chat.testing import ManualClock
from milpa_chat.testing.transport import RecordingTransport

ALICE = ChatUser("1001", "Alice", "alice")
BOB = ChatUser("1002", "Bob", "bob")
MANAGER = ChatUser("2001", "Maria", "maria")
MANAGER2 = ChatUser("2002", "Mateo", "mateo")
STRANGER = ChatUser("9999", "Eve", "eve")
APPROVERS_CHAT = "-500"


class Tools:
    def __init__(self) -> None:
        self.notes = {i: f"note {i}" for i in range(1, 26)}
        self.deleted: list[int] = []
        self.paid: list[tuple[str, float]] = []

    @tool("list_notes", "List notes", scopes=["notes:read"], mutating=False)
    def list_notes(self, page: Annotated[int, Param("Page", clamp=(1, 100))] = 1) -> ToolResult:
        items = [{"id": k, "title": v} for k, v in sorted(self.notes.items())]
        return ToolResult.paginated(items[(page - 1) * 10 : page * 10], page, len(items), 10, "Notes")

    @tool("search_notes", "Search notes", scopes=["notes:read"], mutating=False)
    def search_notes(self, query: str, page: int = 1, tags: list[str] | None = None) -> dict[str, Any]:
        return {"query": query, "page": page, "tags": tags}

    @tool("delete_note", "Delete a note", scopes=["notes:write"], mutating=True)
    async def delete_note(self, note_id: int) -> dict[str, Any]:
        self.deleted.append(note_id)
        self.notes.pop(note_id, None)
        return {"deleted": note_id}

    @tool(
        "pay",
        "Send a payment",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",), expires_in=600),
    )
    async def pay(self, to: str, amount: float) -> dict[str, Any]:
        self.paid.append((to, amount))
        return {"paid": amount, "to": to}

    @tool(
        "big_pay",
        "A payment that needs two approvers",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",), quorum=2),
    )
    async def big_pay(self, to: str, amount: float) -> dict[str, Any]:
        self.paid.append((to, amount))
        return {"paid": amount, "to": to}


IDENTITIES = {
    "roles": {"writer": ["notes:read", "notes:write", "payments:send"], "manager": ["notes:read", "payments:approve"]},
    "users": {
        "telegram:1001": ["writer"],
        "telegram:1002": ["writer"],
        "telegram:2001": ["manager"],
        "telegram:2002": ["manager"],
        "slack:T1:U2001": ["manager"],
    },
    "defaults": {"scopes": []},
    "approvers": {"telegram": [APPROVERS_CHAT]},
}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def tools() -> Tools:
    return Tools()


def make_assistant(tools: Tools, store: Any, identities: dict[str, Any] | None = None) -> Assistant:
    registry = ToolRegistry(store=store)
    registry.scan(tools)
    return Assistant(registry, Identities.from_dict(identities or IDENTITIES), approval_ttl=600)


@pytest.fixture
def assistant(tools: Tools, clock: ManualClock) -> Assistant:
    return make_assistant(tools, MemoryStore(clock=clock))


@pytest.fixture
def tg(assistant: Assistant) -> RecordingTransport:
    surface = RecordingTransport("telegram")
    assistant.attach(surface)
    return surface


def sqlite_store(path: Path, clock: ManualClock) -> Any:
    from milpa_chat.store.sqlite import SqliteStore

    return SqliteStore(str(path), clock=clock)

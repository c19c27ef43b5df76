from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from milpa_chat import Param, ToolRegistry, ToolResult, VerifyPolicy, tool
from milpa_chat.chat import Assistant, ChatUser, Identities
from milpa_chat.store import MemoryStore
from milpa_chat.testing import ManualClock
from milpa_chat.testing.transport import RecordingTransport

ANA = ChatUser("1001", "Ana", "ana")
BOB = ChatUser("2002", "Bob", "bob")
APPROVERS_CHAT = "-500"


class Filters(BaseModel):
    tags: list[str] = []
    archived: bool = False


class Tools:
    def __init__(self) -> None:
        self.notes = {i: f"note {i}" for i in range(1, 26)}
        self.deleted: list[int] = []
        self.searches: list[dict[str, Any]] = []
        self.paid: list[tuple[str, float]] = []
        self.gate = asyncio.Event()
        self.exports = 0

    @tool("list_notes", "List saved notes", scopes=["notes:read"], tags=["notes"], mutating=False)
    def list_notes(self, page: Annotated[int, Param("Page number", clamp=(1, 100))] = 1) -> ToolResult:
        items = [{"id": k, "title": v} for k, v in sorted(self.notes.items())]
        return ToolResult.paginated(items[(page - 1) * 10 : page * 10], page, len(items), 10, "Notes")

    @tool("search_notes", "Find notes by words", scopes=["notes:read"], mutating=False)
    def search_notes(
        self,
        query: Annotated[str, Param("Words to look for")],
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
        order: Literal["new", "old"] = "new",
        tags: list[str] | None = None,
        filters: Filters | None = None,
        archived: bool | None = None,
        min_score: float | None = None,
        api_token: str = "",
    ) -> dict[str, Any]:
        call = {
            "query": query,
            "limit": limit,
            "order": order,
            "tags": tags,
            "archived": archived,
            "filters": filters.model_dump() if filters else None,
            "min_score": min_score,
        }
        self.searches.append(call)
        return call

    @tool("delete_note", "Delete a note", scopes=["notes:write"], mutating=True, confirm=True)
    async def delete_note(self, note_id: int) -> dict[str, Any]:
        self.deleted.append(note_id)
        self.notes.pop(note_id, None)
        return {"deleted": note_id}

    @tool("export_notes", "Export every note (slow)", scopes=["notes:read"], mutating=False)
    async def export_notes(self) -> dict[str, Any]:
        self.exports += 1
        await self.gate.wait()
        return {"exported": len(self.notes)}

    @tool(
        "pay",
        "Send a payment",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",), expires_in=600),
    )
    async def pay(self, to: str, amount: float, api_key: str = "") -> dict[str, Any]:
        self.paid.append((to, amount))
        return {"paid": amount, "to": to}

    @tool("admin_wipe", "Wipe everything", scopes=["admin"], mutating=True)
    def admin_wipe(self) -> str:
        return "wiped"


IDENTITIES = {
    "roles": {"writer": ["notes:read", "notes:write", "payments:send"], "manager": ["notes:read", "payments:approve"]},
    "users": {"telegram:1001": ["writer"], "telegram:2002": ["manager"]},
    "defaults": {"scopes": []},
    "approvers": {"telegram": [APPROVERS_CHAT]},
}


@pytest.fixture
def tools() -> Tools:
    return Tools()


@pytest.fixture
def registry(tools: Tools) -> ToolRegistry:
    registry = ToolRegistry()
    registry.scan(tools)
    return registry


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def assistant(tools: Tools, clock: ManualClock) -> Assistant:
    registry = ToolRegistry(store=MemoryStore(clock=clock))
    registry.scan(tools)
    return Assistant(registry, Identities.from_dict(IDENTITIES), approval_ttl=600)


@pytest.fixture
def telegram(assistant: Assistant) -> RecordingTransport:
    surface = RecordingTransport("telegram")
    assistant.attach(surface)
    return surface


@pytest.fixture
async def closing() -> AsyncIterator[list[Any]]:
    """Widgets that refresh by themselves; closed after the test."""
    opened: list[Any] = []
    yield opened
    for widget in opened:
        widget.close()

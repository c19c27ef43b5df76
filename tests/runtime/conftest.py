from __future__ import annotations

import threading
from typing import Annotated, Any

import pytest

from milpa_chat import Param, ToolContext, ToolRegistry, ToolResult, tool
from milpa_chat.store import MemoryStore
from milpa_chat.testing import ManualClock


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
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def notes() -> NoteTools:
    return NoteTools()


@pytest.fixture
def registry(notes: NoteTools, clock: ManualClock) -> ToolRegistry:
    reg = ToolRegistry(store=MemoryStore(clock=clock))
    reg.scan(notes)
    return reg


@pytest.fixture
def writer() -> ToolContext:
    return ToolContext.mcp("req-1", "agent:writer", ["notes:read", "notes:write"])


def backend_spec(backend: str, tmp_path: Any) -> Any:
    """A store spec for ``tests.store._workers.open_spec`` on ``backend`` (memory, sqlite, postgres), as a
    generator: PostgreSQL gets a fresh schema, dropped afterwards (a failure when MILPA_REQUIRE_POSTGRES=1
    and the server is away, else a skip)."""
    import secrets

    from tests.conftest import POSTGRES_DSN, REQUIRE_POSTGRES

    if backend != "postgres":
        yield {"backend": backend, "path": str(tmp_path / "store.db")}
        return
    try:
        import psycopg

        with psycopg.connect(POSTGRES_DSN, connect_timeout=3, autocommit=True) as conn:
            schema = f"milpa_rt_{secrets.token_hex(5)}"
            conn.execute(f'CREATE SCHEMA "{schema}"')
    except Exception as exc:
        if REQUIRE_POSTGRES:
            pytest.fail(f"PostgreSQL at {POSTGRES_DSN} is unreachable ({exc}); MILPA_REQUIRE_POSTGRES=1 requires it")
        pytest.skip(f"PostgreSQL at {POSTGRES_DSN} is unreachable ({exc})")
    yield {"backend": "postgres", "dsn": POSTGRES_DSN, "schema": schema}
    with psycopg.connect(POSTGRES_DSN, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')

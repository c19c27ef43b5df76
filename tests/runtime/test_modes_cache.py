"""A conversation's approval mode is read from the store once per ``cache_seconds``, not once per tool call:
a change made through the desk applies to the very next call, one made by another process (another desk over
the same database) at the latest ``cache_seconds`` later. The grant desk's loosening is called through the
typed :class:`~milpa_chat.runtime.services.StandingGate` seam."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from milpa_chat import ToolContext, ToolRegistry, tool
from milpa_chat.runtime.modes import CACHE_SECONDS, MODES, ModeDesk
from milpa_chat.runtime.policy import ChannelPolicy, PolicyGate
from milpa_chat.runtime.services import StandingGate
from milpa_chat.store.base import Record
from milpa_chat.store.sqlite import SqliteStore
from milpa_chat.testing import ManualClock

ALICE = ToolContext(principal="slack:T1:U1", channel="slack", scopes=("notes:write",), extra={"chat_id": "C1"})


class Counting(SqliteStore):
    """A SQLite store that counts the reads of approval modes."""

    mode_reads = 0

    async def get(self, collection: str, key: str) -> Record | None:
        if collection == MODES:
            self.mode_reads += 1
        return await super().get(collection, key)


class Notes:
    def __init__(self) -> None:
        self.renamed: list[int] = []

    @tool("rename_note", "Rename a note", scopes=["notes:write"], mutating=True)
    async def rename_note(self, note_id: int) -> str:
        self.renamed.append(note_id)
        return f"renamed {note_id}"


def worker(path: Path, clock: ManualClock, **options: Any) -> tuple[ModeDesk, Counting, Notes]:
    """One process's registry over the shared database: writes run without confirmation unless a mode asks."""
    store = Counting(str(path), clock=clock)
    policy = PolicyGate({"slack": ChannelPolicy(require_auth=True, require_confirmation_for_mutating=False)})
    registry = ToolRegistry(store=store, policy=policy)
    notes = Notes()
    registry.scan(notes)
    return ModeDesk(registry, **options).install(), store, notes


async def asks(desk: ModeDesk, note: int) -> bool:
    """Whether renaming ``note`` asked Alice to confirm (else it ran)."""
    result = await desk.registry.call("rename_note", {"note_id": note}, ALICE)
    assert result.success, result
    return bool(result.meta.get("requires_confirmation"))


async def test_twenty_tool_calls_in_one_conversation_read_the_mode_once(tmp_path: Path) -> None:
    clock = ManualClock()
    desk, store, notes = worker(tmp_path / "db.sqlite", clock)
    for n in range(20):
        assert not await asks(desk, n)
    assert notes.renamed == list(range(20)) and store.mode_reads == 1
    print(f"mode reads for 20 tool calls in one conversation: {store.mode_reads}")

    # a change made through this desk applies to the very next call
    await desk.set(ALICE, "confirm every write")
    reads = store.mode_reads
    assert [await asks(desk, n) for n in (100, 101, 102)] == [True, True, True]
    assert store.mode_reads == reads + 1 and notes.renamed == list(range(20))
    await desk.set(ALICE, "off")
    assert not await asks(desk, 103)
    await store.close()


async def test_a_change_made_by_another_process_applies_within_cache_seconds(tmp_path: Path) -> None:
    clock = ManualClock()
    here, store, notes = worker(tmp_path / "db.sqlite", clock)
    there, other, _ = worker(tmp_path / "db.sqlite", clock)
    assert not await asks(here, 1)
    await there.set(ALICE, "confirm every write")  # another process tightens Alice's mode

    clock.advance(CACHE_SECONDS / 2)  # within the bound this process has not read the store again...
    reads = store.mode_reads
    await asks(here, 2)
    assert store.mode_reads == reads
    clock.advance(CACHE_SECONDS / 2)  # ...and at the bound it has: the tighter mode applies
    assert await asks(here, 3) and store.mode_reads == reads + 1
    assert notes.renamed[0] == 1 and 3 not in notes.renamed

    # cache_seconds=0: every call reads the store, so another process's change applies at once
    now, fresh, _ = worker(tmp_path / "db.sqlite", clock, cache_seconds=0)
    assert await asks(now, 4)
    await there.set(ALICE, "off")
    assert not await asks(now, 5)
    assert fresh.mode_reads == 2
    for s in (store, other, fresh):
        await s.close()


def test_cache_seconds_must_be_a_number_of_seconds(tmp_path: Path) -> None:
    registry = ToolRegistry()
    for bad in (-1, "2", True, float("nan")):
        with pytest.raises(ValueError, match=r"cache_seconds=.*0 or more"):
            ModeDesk(registry, cache_seconds=bad)  # type: ignore[arg-type]


def test_a_grant_desk_is_a_whole_standing_gate_and_anything_less_is_refused_at_once() -> None:
    from milpa_chat.grants.desk import GrantDesk

    registry = ToolRegistry()
    desk = GrantDesk(registry)
    assert isinstance(desk, StandingGate) and registry.grants is desk

    class GateOnly:  # judges calls but cannot draft a loosening: modes would have nothing to draft
        async def gate(self, call: Any) -> None:
            return None

    with pytest.raises(TypeError, match="has no consult and no draft_loosening"):
        registry.grants = GateOnly()  # type: ignore[assignment]
    assert registry.grants is desk
    registry.grants = None
    assert registry.grants is None

"""The audit trail's lanes: a chain of each writing process's own, registered by an entry of the main chain.

A process given ``AuditTrail(store, lane="worker")`` (or ``MILPA_AUDIT_LANE``) appends to its lane and never
waits for another writer. A lane's records live in ``audit_trail_lanes`` (``<lane>/<seq>``) with a head of its
own in ``audit_trail_lane_heads``; its first entry links to the hash of the main chain's ``lane`` entry that
registered it. :func:`register` starts a lane (head first, then the registration, then the head names it),
:func:`verify_lanes` checks every lane beside the main chain: registered, linked to its registration, its head
naming its last entry, its pins matching; a registered lane with no head was deleted whole.

This module knows the trail only through the callable that appends the registration, so it sits below
:mod:`milpa_chat.runtime.trail`, which names its public objects.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from milpa_chat.runtime.trail_chain import (
    GENESIS,
    LANE_HEADS,
    LANES,
    Break,
    Pin,
    TrailEntry,
    check_chain,
    check_head,
    check_pins,
    lane_key,
)

if TYPE_CHECKING:
    from milpa_chat.store.base import Record, Store

__all__ = ["LANE_ENV", "Registered", "lane_entries", "links_to", "register", "verify_lanes"]

#: Names the lane this process writes to (``worker``: this process, as its lease holder ``host:pid:start``).
LANE_ENV = "MILPA_AUDIT_LANE"
#: What :func:`register` answers: the main chain's entry that registered the lane, and the lane's last
#: position and hash when it has no entries yet (``None`` when it has).
Registered = tuple[TrailEntry, tuple[int, str] | None]


async def register(store: Store, lane: str, append_registration: Callable[[], Awaitable[TrailEntry]]) -> Registered:
    """Start ``lane``, once: its head first (no entries yet), then an entry of the main chain naming the lane
    (``append_registration``), whose hash the lane's first entry links to, then the head names that entry. So
    a lane is never unregistered and a whole lane deleted leaves its registration without a head. A writer
    stopped between these writes leaves a lane without entries, which verifies."""
    head = await store.get(LANE_HEADS, lane)
    if head is None:
        await store.insert(LANE_HEADS, lane, {"seq": 0, "hash": "", "prev": ""})
        head = await store.get(LANE_HEADS, lane)
    assert head is not None
    if not head.value.get("hash"):
        registered = await append_registration()
        while head is not None and not head.value.get("hash"):
            value = {**head.value, "hash": registered.hash, "registered": registered.seq}
            if await store.update(LANE_HEADS, lane, value, expected_version=head.version):
                break
            head = await store.get(LANE_HEADS, lane)
        head = await store.get(LANE_HEADS, lane)
        assert head is not None
    entry = TrailEntry(int(head.value["registered"]), 0, "lane", lane, {}, "", head.value["hash"])
    return entry, ((0, str(head.value["hash"])) if int(head.value["seq"]) == 0 else None)


async def lane_entries(store: Store) -> list[tuple[str, TrailEntry]]:
    """The entries of every lane, with their lane's name, lane by lane."""
    return [(r.key.rpartition("/")[0], TrailEntry.from_dict(r.value)) for r in await store.scan(LANES)]


def links_to(records: list[Record] | None, registration: TrailEntry) -> bool:
    """Whether the first of a lane's ``records`` links to ``registration``."""
    return bool(records) and records[0].value.get("prev") == registration.hash  # type: ignore[index]


async def verify_lanes(
    store: Store,
    entries: list[TrailEntry],
    heads_before: dict[str, Any],
    records: list[Record],
    pins: list[Pin],
) -> tuple[tuple[tuple[str, int, str], ...], tuple[str, Break] | None]:
    """Every lane: registered by an entry of the main chain (``entries``), its chain linked to that entry, its
    head naming its last entry, its pins matching; a registered lane with no head was deleted whole. Answers
    each lane's name, length and last hash, and the first lane found wrong with where and why."""
    grouped: dict[str, list[Record]] = {}
    for record in records:
        grouped.setdefault(record.key.rpartition("/")[0], []).append(record)
    registered: dict[str, TrailEntry] = {}
    for e in entries:  # two writers of one lane may both register it: the one its first entry links to
        if e.kind == "lane" and (e.subject not in registered or links_to(grouped.get(e.subject), e)):
            registered[e.subject] = e
    heads_after = {r.key: r.value for r in await store.scan(LANE_HEADS)}
    names = sorted(set(registered) | set(grouped) | set(heads_before) | set(heads_after) | {p.lane for p in pins})
    checked: list[tuple[str, int, str]] = []
    fault: tuple[str, Break] | None = None
    for name in (n for n in names if n):
        reg, found = registered.get(name), grouped.get(name, [])
        before, after = heads_before.get(name), heads_after.get(name)
        problem: Break | None = None
        chain: list[TrailEntry] = []
        if reg is None:
            if found or any(p.lane == name for p in pins):
                problem = (1, "no entry of the main chain registers it: the lane was forged (or moved)")
            elif after is not None and int(after.get("seq") or 0) > 0:
                problem = (1, "its head names entries but no entry of the main chain registers it: forged")
            else:
                continue  # a lane being registered (or whose writer stopped before): nothing in it yet
        elif before is None and after is None:
            problem = (
                1,
                f"entry {reg.seq} of the main chain registers it, but it has no head: the whole lane was deleted",
            )
        else:
            chain, problem = check_chain(found, reg.hash, functools.partial(lane_key, name))
            if problem is None:
                problem = await _lane_head(store, name, chain, before, after)
            if problem is None:
                problem = check_pins(chain, [p for p in pins if p.lane == name])
        checked.append((name, len(chain), chain[-1].hash if chain else (reg.hash if reg else GENESIS)))
        if problem is not None and fault is None:
            fault = (name, problem)
    return tuple(checked), fault


async def _lane_head(store: Store, name: str, entries: list[TrailEntry], before: Any, after: Any) -> Break | None:
    """The lane's head must name its last entry (a writer between its entry and its head is waited for).

    Entries past a lane's head are not a break: a lane has one writer, and one killed between its
    entries and its head never comes back to move it (adding them by hand is as easy as moving the head)."""
    for attempt in range(4):
        moved_to = int(after["seq"]) if after is not None and "seq" in after else None
        problem = check_head(entries, before, moved_to)
        if problem is not None and attempt == 3 and "past the head" in problem[1]:
            return None
        if problem is None or attempt == 3:
            return problem
        await asyncio.sleep(0.05 * 2**attempt)
        record = await store.get(LANE_HEADS, name)
        after = record.value if record is not None else None
    return None

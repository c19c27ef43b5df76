"""Appends made while a batch is written go in the next batch: one chain, every entry once and in the order
each caller asked, and a batch is one write (its entries and the head in one transaction, one wait for the disk)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from milpa_chat.runtime.trail import AuditTrail
from milpa_chat.runtime.trail_chain import HEAD, LANE_HEADS
from milpa_chat.store import Store
from tests.runtime.conftest import backend_spec
from tests.store._workers import open_spec


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    yield from backend_spec(request.param, tmp_path)


class Writes:
    """The real store, with each write recorded: (method, collection, durable)."""

    def __init__(self, store: Store) -> None:
        self.store, self.writes = store, list[tuple[str, str, bool]]()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.store, name)
        if name not in ("insert", "put", "update", "update_with", "delete", "take"):
            return attr

        async def recorded(*args: Any, **kwargs: Any) -> Any:
            self.writes.append((name, args[0], kwargs.get("durable", True)))
            return await attr(*args, **kwargs)

        return recorded


async def test_concurrent_appends_share_one_write_and_one_sync(spec: dict[str, Any]) -> None:
    store = open_spec(spec)
    counted = Writes(store)
    trail = AuditTrail(counted)
    await trail.append("call", "first", {})  # a batch of its own: its entry and the head, both durable
    assert counted.writes == [("insert", "audit_trail", True), ("insert", HEAD[0], True)]
    counted.writes.clear()
    entries = await asyncio.gather(*[trail.append("call", f"t{i}", {"n": i}) for i in range(40)])
    assert [e.subject for e in entries] == [f"t{i}" for i in range(40)]  # each caller got its own entry
    assert [e.seq for e in entries] == list(range(2, 42))
    # each batch: its entries and the head together (the first batch one entry, the rest in the next), durably
    assert len(counted.writes) <= 2 and counted.writes == [("update_with", HEAD[0], True)] * len(counted.writes)
    verdict = await trail.verify()
    assert verdict.ok and verdict.checked == 41, verdict
    stored = [r.value["seq"] for r in await store.scan("audit_trail")]
    assert stored == list(range(1, 42))
    print(f"\n40 concurrent appends on {spec['backend']}: {len(counted.writes)} write(s), each entries and head")
    await store.close()


async def test_a_failed_batch_fails_its_callers_and_the_next_append_makes_the_chain_whole(
    spec: dict[str, Any],
) -> None:
    store = open_spec(spec)
    trail = AuditTrail(store)
    await trail.append("call", "before", {})

    class Refusing:
        def __getattr__(self, name: str) -> Any:
            attr = getattr(store, name)
            if name in ("insert", "update_with"):

                async def refused(*args: Any, **kwargs: Any) -> Any:
                    raise RuntimeError("the database went away")

                return refused
            return attr

    trail.store = Refusing()
    results = await asyncio.gather(*[trail.append("call", f"t{i}", {}) for i in range(5)], return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in results), results
    trail.store = store
    after = await trail.append("call", "after", {})
    assert after.seq == 2
    verdict = await trail.verify()
    assert verdict.ok and verdict.checked == 2, verdict
    await store.close()


async def test_a_lane_reads_its_head_only_once_and_still_follows_another_writer(spec: dict[str, Any]) -> None:
    """A lane has one writer: after its first batch it knows the lane's head (the one it wrote) and reads it no
    more, one round trip a batch less. A second writer of the same lane (a name given twice) is still followed:
    its entries are not overwritten and the lane holds."""
    store = open_spec(spec)
    reads: list[str] = []

    class Reads:
        def __getattr__(self, name: str) -> Any:
            attr = getattr(store, name)
            if name != "get":
                return attr

            async def counted(collection: str, key: str) -> Any:
                reads.append(collection)
                return await attr(collection, key)

            return counted

    trail = AuditTrail(Reads(), lane="billing-1")
    await trail.append("call", "first", {})  # registers the lane: reads its head
    reads.clear()
    for i in range(10):
        await trail.append("call", f"t{i}", {"n": i})
    assert LANE_HEADS not in reads, reads
    other = AuditTrail(store, lane="billing-1")  # the same lane, from another writer
    for i in range(3):
        await other.append("call", f"other-{i}", {"n": i})
    mine = await trail.append("call", "after the other", {})
    assert mine.seq == 15  # first, t0..t9, other-0..2, then this one: nothing overwritten
    verdict = await trail.verify()
    assert verdict.ok and dict((name, n) for name, n, _ in verdict.lanes)["billing-1"] == 15, verdict
    await store.close()

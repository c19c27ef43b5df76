"""Every state change that must happen once happens once, however many consumers race for it:
threads with their own store instances, two processes, and asyncio tasks on one instance."""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Callable
from typing import Any

import pytest

from milpa_chat.store import Store
from tests.store._workers import (
    COLLECTION,
    KEY,
    MADE,
    RATE_LIMIT,
    attempt,
    contend_in_process,
    open_spec,
    prepare,
    race_threads,
)
from tests.store.conftest import BACKENDS, DURABLE

OPS = ["take", "update", "update_with", "insert", "hit"]


def expected_winners(op: str) -> int:
    return RATE_LIMIT if op == "hit" else 1


async def check_final_state(store: Store, op: str, winners: list[int]) -> None:
    """The stored state tells the same story as the winners."""
    record = await store.get(COLLECTION, KEY)
    if op == "take":
        assert record is None
    elif op == "update":
        assert record is not None and record.value == {"state": "decided", "by": winners[0]}
        assert record.version == 2
    elif op == "update_with":  # the winner's update and its records, and nobody else's
        assert record is not None and record.value == {"state": "decided", "by": winners[0]}
        assert record.version == 2
        made = await store.scan(MADE)
        assert [(r.key, r.value, r.version) for r in made] == [
            (f"by-{winners[0]}", {"by": winners[0]}, 1),
            ("shared", {"by": winners[0]}, 1),
        ]
    elif op == "insert":
        assert record is not None and record.value == {"claimed_by": winners[0]} and record.version == 1
    else:
        assert not (await store.hit("contest", cost=1, limit=RATE_LIMIT, window=60.0)).allowed


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("spec", DURABLE, indirect=True)
async def test_100_threads_with_own_instances(spec: dict[str, Any], op: str) -> None:
    store = open_spec(spec)
    try:
        await prepare(store, op)
        winners = await asyncio.to_thread(race_threads, spec, op, range(100))
        assert len(winners) == expected_winners(op), winners
        await check_final_state(store, op, winners)
    finally:
        await store.close()


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("spec", DURABLE, indirect=True)
async def test_two_processes_of_50_consumers(spec: dict[str, Any], op: str) -> None:
    store = open_spec(spec)
    try:
        await prepare(store, op)
        winners = await asyncio.to_thread(_race_processes, spec, op)
        assert len(winners) == expected_winners(op), winners
        await check_final_state(store, op, winners)
    finally:
        await store.close()


def _race_processes(spec: dict[str, Any], op: str) -> list[int]:
    ctx = multiprocessing.get_context("spawn")
    gate = ctx.Barrier(2)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=contend_in_process, args=(spec, op, range(n * 50, n * 50 + 50), gate, results))
        for n in range(2)
    ]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    errors = [detail for status, detail in outcomes if status != "ok"]
    assert not errors, errors
    return [who for _, winners in outcomes for who in winners]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("opener", BACKENDS, indirect=True)
async def test_100_tasks_on_one_instance(opener: Callable[..., Store], op: str) -> None:
    store = opener()
    try:
        await prepare(store, op)
        results = await asyncio.gather(*(attempt(store, op, who) for who in range(100)))
        winners = [who for who, won in enumerate(results) if won]
        assert len(winners) == expected_winners(op), winners
        await check_final_state(store, op, winners)
    finally:
        await store.close()

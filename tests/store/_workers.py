"""Code the store tests run in other threads and processes (importable under the spawn start method).

``python -m tests.store._workers write-pending '<spec json>'`` writes the records that
``test_durability`` expects to find after a restart, then exits without closing the store.
``... write-lax '<spec json>'`` writes records with ``durable=False`` and is killed (SIGKILL)
before it can close anything.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from milpa_chat.store import MemoryStore, Store

COLLECTION = "tokens"
KEY = "tok-1"
MADE = "made"  # where the records of an update_with contest are created
RATE_LIMIT = 10

# Per-instance PostgreSQL connections are capped so the whole suite stays far below the
# server's max_connections (100, shared with other users of the test server).
PG_THREADS_PER_INSTANCE = 5


def open_spec(spec: dict[str, Any], **kwargs: Any) -> Store:
    """Open a store described by ``spec`` (see ``tests/store/conftest.py``)."""
    if spec["backend"] == "sqlite":
        from milpa_chat.store.sqlite import SqliteStore

        return SqliteStore(spec["path"], **kwargs)
    if spec["backend"] == "postgres":
        from milpa_chat.store.postgres import PostgresStore

        return PostgresStore(spec["dsn"], schema=spec["schema"], **kwargs)
    if spec["backend"] == "memory":
        return MemoryStore(**kwargs)
    raise ValueError(f"unknown backend in {spec!r}")


async def prepare(store: Store, op: str) -> None:
    """Put the shared state a contest of ``op`` races on."""
    if op in ("take", "update", "update_with"):
        await store.insert(COLLECTION, KEY, {"state": "pending"})


async def attempt(store: Store, op: str, who: int) -> bool:
    """One consumer's try; ``True`` when it won (for ``hit``: when it was allowed)."""
    if op == "take":
        return await store.take(COLLECTION, KEY) is not None
    if op == "update":
        value = {"state": "decided", "by": who}
        return await store.update(COLLECTION, KEY, value, expected_version=1) is not None
    if op == "update_with":  # every consumer also creates a record of its own and one all of them name
        value = {"state": "decided", "by": who}
        made = [(MADE, f"by-{who}", {"by": who}), (MADE, "shared", {"by": who})]
        return await store.update_with(COLLECTION, KEY, value, expected_version=1, inserts=made) is not None
    if op == "insert":
        return await store.insert(COLLECTION, KEY, {"claimed_by": who}) is not None
    if op == "hit":
        return (await store.hit("contest", cost=1, limit=RATE_LIMIT, window=60.0)).allowed
    raise ValueError(f"unknown op {op!r}")


def race_threads(spec: dict[str, Any], op: str, ids: range, start: Callable[[], None] | None = None) -> list[int]:
    """Run one consumer per id, each in its own thread, all released by one barrier.

    SQLite: every thread has its own store instance. PostgreSQL: instances of one connection
    each, shared by PG_THREADS_PER_INSTANCE threads. Returns the ids that won.
    """
    if spec["backend"] == "postgres":
        per, kwargs = PG_THREADS_PER_INSTANCE, {"max_size": 1}
    else:
        per, kwargs = 1, {}
    stores = [open_spec(spec, **kwargs) for _ in range(0, len(ids), per)]
    barrier = threading.Barrier(len(ids) + 1)
    winners: list[int] = []
    errors: list[BaseException] = []

    def consumer(n: int, who: int) -> None:
        try:
            barrier.wait(timeout=60)
            if asyncio.run(attempt(stores[n // per], op, who)):
                winners.append(who)
        except BaseException as exc:  # reported to the test below
            errors.append(exc)

    threads = [threading.Thread(target=consumer, args=(n, who)) for n, who in enumerate(ids)]
    for t in threads:
        t.start()
    if start is not None:
        start()
    barrier.wait(timeout=60)
    for t in threads:
        t.join(timeout=120)
    for s in stores:
        asyncio.run(s.close())
    if errors:
        raise errors[0]
    return winners


def contend_in_process(spec: dict[str, Any], op: str, ids: range, gate: Any, results: Any) -> None:
    """Process target: race ``ids`` in threads once every process has passed ``gate``."""
    try:
        winners = race_threads(spec, op, ids, start=lambda: gate.wait(60))
        results.put(("ok", winners))
    except BaseException as exc:
        results.put(("error", repr(exc)))


async def write_pending(spec: dict[str, Any]) -> None:
    store = open_spec(spec)
    await store.insert("approvals", "ap-1", {"status": "pending", "tool": "refund", "amount": 12.5}, ttl=3600)
    await store.insert("approvals", "ap-2", {"status": "pending", "tool": "deploy", "args": ["prod", 3]})
    await store.put("approvals", "ap-2", {"status": "pending", "tool": "deploy", "args": ["prod", 4]})
    await store.insert("tokens", "tok-9", {"approval": "ap-1", "note": "ñandú ✓"}, ttl=3600)
    for i in range(3):
        await store.append("history:chat-7", {"role": "user", "n": i})
    for _ in range(3):
        await store.hit("user:7", cost=1, limit=3, window=3600)
    # Leave without close(): whatever was acknowledged must already be durable.
    sys.stdout.flush()
    os._exit(0)


async def write_lax(spec: dict[str, Any]) -> None:
    """Records a bot writes without waiting for the disk (delivery keys, page views, a card's mark), then SIGKILL."""
    import signal

    store = open_spec(spec)
    for i in range(300):
        await store.insert("deliveries", f"telegram:{i}", {"chat": "7"}, ttl=3600, durable=False)
    await store.put("views", "v1", {"tool": "list_notes", "page": 1}, ttl=3600, durable=False)
    await store.put("views", "v1", {"tool": "list_notes", "page": 2}, ttl=3600, durable=False)
    await store.insert("approvals", "ap-1", {"status": "pending"})  # durable, after the lax ones
    # the mark of what a card shows, written as the outbox does (a compare-and-set without waiting for the disk)
    marked = await store.update(
        "approvals", "ap-1", {"status": "pending", "shown": "pending:1"}, expected_version=1, durable=False
    )
    assert marked is not None and marked.version == 2
    print("written", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    if sys.argv[1:2] == ["write-pending"]:
        asyncio.run(write_pending(json.loads(sys.argv[2])))
    elif sys.argv[1:2] == ["write-lax"]:
        asyncio.run(write_lax(json.loads(sys.argv[2])))
    else:
        raise SystemExit(f"usage: python -m tests.store._workers write-pending|write-lax SPEC_JSON, got {sys.argv[1:]}")

"""Writes that do not wait for the disk (``durable=False``), SQLite's statements on the event loop,
and the sweeper's purge of expired delivery keys on the durable backends."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from milpa_chat import ToolRegistry
from milpa_chat.chat import Assistant, Identities
from milpa_chat.store import Store
from milpa_chat.store.sqlite import SqliteStore
from milpa_chat.testing import ManualClock, eventually
from tests.store._workers import open_spec
from tests.store.conftest import admin_sql

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("opener", ["memory", "sqlite", "postgres"], indirect=True)
async def test_a_write_without_waiting_for_the_disk_behaves_like_any_other(store: Store) -> None:
    first = await store.insert("deliveries", "slack:1", {"chat": "C1"}, ttl=60, durable=False)
    assert first is not None and first.version == 1
    assert await store.insert("deliveries", "slack:1", {"chat": "C1"}, ttl=60, durable=False) is None
    view = await store.put("views", "v", {"page": 1}, durable=False)
    again = await store.put("views", "v", {"page": 2}, durable=False)
    assert (view.version, again.version) == (1, 2)
    got = await store.get("views", "v")
    assert got is not None and got.value == {"page": 2}
    got.value["page"] = 99  # what a read returns is the caller's copy
    assert (await store.get("views", "v")).value == {"page": 2}  # type: ignore[union-attr]
    updated = await store.update("views", "v", {"page": 3}, expected_version=2)
    assert updated is not None and updated.version == 3
    marked = await store.update("views", "v", {"page": 4}, expected_version=3, durable=False)
    assert marked is not None and marked.version == 4
    # still a compare-and-set: a writer holding an older version loses, and nothing changes
    assert await store.update("views", "v", {"page": 5}, expected_version=3, durable=False) is None
    assert (await store.get("views", "v")).value == {"page": 4}  # type: ignore[union-attr]


@pytest.mark.parametrize("spec", ["sqlite", "postgres"], indirect=True)
async def test_lax_writes_survive_the_writer_being_killed(spec: dict[str, Any]) -> None:
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "tests.store._workers", "write-lax", json.dumps(spec)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == -9 and "written" in done.stdout, done.stderr
    store = open_spec(spec)
    try:
        keys = [r.key for r in await store.scan("deliveries")]
        assert len(keys) == 300 and "telegram:299" in keys
        view = await store.get("views", "v1")
        assert view is not None and (view.version, view.value["page"]) == (2, 2)
        marked = await store.get("approvals", "ap-1")  # the lax update after the durable insert survived too
        assert marked is not None and (marked.version, marked.value["shown"]) == (2, "pending:1")
    finally:
        await store.close()


async def test_a_locked_sqlite_file_sends_the_write_to_its_thread_and_the_loop_keeps_running(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "bot.db", busy_timeout=10)
    await store.put("views", "v", {"page": 1})
    other = sqlite3.connect(tmp_path / "bot.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process is writing
    other.execute("INSERT INTO milpa_meta VALUES ('held', 'x')")
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    beat = asyncio.ensure_future(ticker())
    try:
        started = time.perf_counter()
        # readers are never blocked by a writer: the other connection holds the write lock until the ROLLBACK
        # below, so a blocked read could only fail (after the 10 s busy timeout) or hang (caught at 60 s)
        got = await asyncio.wait_for(store.get("views", "v"), 60)
        assert got is not None and got.value == {"page": 1}
        print(f"\na read beside a held write lock took {(time.perf_counter() - started) * 1000:.1f} ms")
        write = asyncio.ensure_future(store.insert("deliveries", "telegram:1", {"chat": "7"}, durable=False))
        seen = ticks
        await eventually(lambda: ticks >= seen + 10, timeout=5)  # the loop keeps ticking while the write waits
        assert not write.done()  # waiting on the writer thread (the lock is still held), not on the event loop
        other.execute("ROLLBACK")
        record = await asyncio.wait_for(write, 5)
        assert record is not None and record.key == "telegram:1"
        assert await store.insert("deliveries", "telegram:1", {"chat": "7"}, durable=False) is None
    finally:
        beat.cancel()
        other.close()
        await store.close()


async def test_sqlite_keeps_the_wal_small_when_writes_run_on_the_loop(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "bot.db")
    wal = tmp_path / "bot.db-wal"
    try:
        sizes = []
        for i in range(2000):
            await store.insert("deliveries", f"telegram:{i}", {"chat": "7"}, ttl=3600, durable=False)
            if i % 100 == 99:
                await asyncio.sleep(0.01)  # room for the pool's checkpoint
                sizes.append(wal.stat().st_size)
        # without checkpoints the WAL would hold every page written: about 25 MB for 2,000 inserts
        assert max(sizes) < 8_000_000, sizes
        assert len(await store.scan("deliveries")) == 2000
    finally:
        await store.close()


async def test_writes_during_the_stores_own_checkpoint_wait_for_it_and_stay_on_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool's checkpoint holds the file's write lock a moment (RESTART): a write that finds it busy waits for
    that checkpoint and writes on the loop, instead of going to the writer thread, whose batches would then
    hold the lock and send every next write there too."""
    store = SqliteStore(tmp_path / "bot.db")
    real_checkpoint, real_submit = store._checkpoint, store._writer.submit
    handed: list[bool] = []

    def checkpoint() -> None:
        conn = store._conn()
        conn.execute("BEGIN IMMEDIATE")  # holds the write lock like a RESTART checkpoint waiting for writers
        time.sleep(0.2)
        conn.execute("COMMIT")
        real_checkpoint()

    def submit(work: Any, *, durable: bool) -> Any:
        handed.append(durable)
        return real_submit(work, durable=durable)

    monkeypatch.setattr(store, "_checkpoint", checkpoint)
    monkeypatch.setattr(store._writer, "submit", submit)
    try:
        for i in range(200):  # the 200th write on the loop starts the pool's checkpoint
            await store.insert("deliveries", f"telegram:{i}", {"chat": "7"}, durable=False)
        await asyncio.sleep(0.02)
        written = await asyncio.gather(*(store.put("views", f"v{i}", {"page": i}) for i in range(50)))
        assert [r.value["page"] for r in written] == list(range(50))
        assert handed == []
        assert len(await store.scan("views")) == 50
    finally:
        await store.close()


def _deliveries_left(spec: dict[str, Any]) -> int:
    if spec["backend"] == "sqlite":
        conn = sqlite3.connect(spec["path"])
        try:
            (left,) = conn.execute("SELECT count(*) FROM milpa_records WHERE collection = 'deliveries'").fetchone()
        finally:
            conn.close()
        return int(left)
    rows = admin_sql(
        spec["dsn"], f"SELECT count(*) FROM \"{spec['schema']}\".milpa_records WHERE collection = 'deliveries'"
    )
    return int(rows[0][0])


@pytest.mark.parametrize("spec", ["sqlite", "postgres"], indirect=True)
async def test_the_sweeper_deletes_expired_delivery_keys(spec: dict[str, Any]) -> None:
    clock = ManualClock(1_700_000_000.0)
    store = open_spec(spec, clock=clock)
    assistant = Assistant(ToolRegistry(store=store), Identities.from_dict({}))
    try:
        for i in range(5):
            await store.insert("deliveries", f"telegram:{i}", {"chat": "1"}, ttl=60, durable=False)
        await store.insert("deliveries", "telegram:fresh", {"chat": "1"}, ttl=600, durable=False)
        assert _deliveries_left(spec) == 6
        clock.advance(61)
        sweeper = asyncio.ensure_future(assistant.run_sweeper(0.01, purge_every=0))
        try:
            for _ in range(300):
                if _deliveries_left(spec) == 1:
                    break
                await asyncio.sleep(0.02)
        finally:
            sweeper.cancel()
        assert _deliveries_left(spec) == 1
        assert await store.get("deliveries", "telegram:fresh") is not None
    finally:
        await store.close()


async def test_sqlite_writes_committed_together_fail_alone(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "bot.db")
    try:
        writes = [store.insert("tokens", f"t{i}", {"n": i}) for i in range(30)]
        broken = store.hit("user:1", cost="one", limit=5, window=60)  # type: ignore[arg-type]
        results = await asyncio.gather(*writes[:15], broken, *writes[15:], return_exceptions=True)
        assert isinstance(results[15], TypeError)
        assert all(r is not None and not isinstance(r, BaseException) for i, r in enumerate(results) if i != 15)
        assert [r.key for r in await store.scan("tokens")] == sorted(f"t{i}" for i in range(30))
        assert (await store.hit("user:1", cost=1, limit=5, window=60)).remaining == 4
    finally:
        await store.close()

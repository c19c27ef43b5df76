"""SQLite's durable writes made on the event loop: each returns only after the WAL holding it was synced, a
lone one syncs on the loop itself, the syncs of concurrent writes are shared (on the sync thread), and a failed
sync is an error that names the disk."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from milpa_chat.errors import StoreError
from milpa_chat.store.sqlite import SqliteStore


class Syncs:
    """Records every ``fsync`` and ``fdatasync`` the store makes: which file (its inode) and that file's size
    then."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, wal: Path, *, fail: bool = False) -> None:
        self.calls: list[tuple[int, int]] = []
        #: what happened, in order: ("start", WAL size, thread) and ("end", WAL size at its start, thread) for
        #: each sync, and whatever a test adds
        self.events: list[tuple[str, int, int]] = []
        #: a sync on a thread other than ``hold_off`` waits for it to be set (a slow disk, for as long as a test
        #: needs); ``holding`` is set meanwhile
        self.gate: threading.Event | None = None
        self.holding = threading.Event()
        self.wal, self.fail = wal, fail
        self.hold_off = threading.get_ident()  # the event loop's thread (the test's)
        for name in ("fsync", "fdatasync"):  # the functions of os the module _wal_sync calls
            if hasattr(os, name):
                monkeypatch.setattr(os, name, self._recording(getattr(os, name)))

    def _recording(self, real: Callable[[int], None]) -> Callable[[int], None]:
        def sync(fd: int) -> None:
            synced = os.fstat(fd)
            self.calls.append((synced.st_ino, synced.st_size))
            thread = threading.get_ident()
            self.events.append(("start", synced.st_size, thread))
            if self.fail:
                raise OSError(5, "Input/output error")
            if self.gate is not None and thread != self.hold_off:
                self.holding.set()
                assert self.gate.wait(30)
            real(fd)
            self.events.append(("end", synced.st_size, thread))

        return sync

    @staticmethod
    def size(path: Path) -> int:
        return path.stat().st_size

    def of_wal(self) -> list[int]:
        """The WAL's size at each of its syncs."""
        if not self.wal.exists():  # (no write yet)
            return []
        wal = self.wal.stat().st_ino
        return [size for inode, size in self.calls if inode == wal]


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path / "bot.db")


async def test_a_durable_write_returns_after_the_wal_holding_it_was_synced(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    wal = Path(f"{store.path}-wal")
    syncs = Syncs(monkeypatch, wal)
    try:
        for n in range(5):
            before = len(syncs.of_wal())
            await store.put("approvals", f"a{n}", {"state": "approved", "n": n})
            after_commit = Syncs.size(wal)  # nothing else writes: the WAL as the commit left it
            synced = syncs.of_wal()[before:]
            assert synced and max(synced) >= after_commit  # a sync that saw the commit's frames
        marked = len(syncs.calls)
        await store.put("approvals", "a0", {"state": "approved", "shown": 1}, durable=False)
        assert len(syncs.calls) == marked  # a write that may be lost on a power cut waits for no disk
    finally:
        await store.close()


async def test_concurrent_durable_writes_share_their_syncs(store: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    syncs = Syncs(monkeypatch, Path(f"{store.path}-wal"))
    try:
        await asyncio.gather(*(store.insert("deliveries", f"d{n}", {"n": n}) for n in range(50)))
        assert 1 <= len(syncs.of_wal()) < 10  # group commit: not one sync per write
        assert len(await store.scan("deliveries")) == 50
    finally:
        await store.close()


async def test_a_failed_sync_is_an_error_naming_the_disk_and_the_next_one_is_tried_again(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    syncs = Syncs(monkeypatch, Path(f"{store.path}-wal"), fail=True)
    try:
        with pytest.raises(StoreError, match=r"syncing it to disk failed .*Input/output error.*check the disk"):
            await store.put("approvals", "a1", {"state": "pending"})
        syncs.fail = False
        record = await store.put("approvals", "a1", {"state": "approved"})
        assert record.version == 2 and syncs.of_wal()  # the write made before the failure is there too
    finally:
        await store.close()


async def test_a_lone_durable_write_syncs_the_wal_on_the_loop_itself_after_its_commit(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No thread hop for a write with nothing else of the store in flight: one sync, made by the loop's thread,
    of the WAL as the commit left it."""
    wal = Path(f"{store.path}-wal")
    syncs = Syncs(monkeypatch, wal)
    loop_thread = threading.get_ident()
    try:
        await store.put("approvals", "a0", {"state": "pending"})  # the first sync opens the WAL (on the thread)
        for n in range(1, 6):
            before = len(syncs.events)
            await store.update("approvals", "a0", {"state": "pending", "n": n}, expected_version=n)
            after_commit = Syncs.size(wal)
            assert syncs.events[before:] == [("start", after_commit, loop_thread), ("end", after_commit, loop_thread)]
    finally:
        await store.close()


async def test_a_write_committed_while_another_syncs_returns_only_after_a_sync_that_began_after_it(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    wal = Path(f"{store.path}-wal")
    syncs = Syncs(monkeypatch, wal)
    try:
        await store.put("approvals", "warm", {"state": "pending"})
        syncs.events.clear()
        syncs.gate = threading.Event()  # the disk is slow: the next sync on the thread waits for the test
        # two writes together: not alone, so they share a round on the sync thread, which now hangs on the disk
        first = asyncio.gather(store.put("approvals", "a1", {"n": 1}), store.put("approvals", "a2", {"n": 2}))
        assert await asyncio.to_thread(syncs.holding.wait, 30)
        (started,) = [e for e in syncs.events if e[0] == "start"]
        assert started[2] != threading.get_ident()  # on the sync thread: the loop goes on meanwhile

        async def late() -> None:
            await store.put("approvals", "a3", {"n": 3})
            syncs.events.append(("a3 returned", 0, 0))

        third = asyncio.ensure_future(late())
        for _ in range(10_000):  # until the third write has committed (the loop still runs)
            if Syncs.size(wal) > started[1]:
                break
            await asyncio.sleep(0.001)
        committed_at = Syncs.size(wal)
        assert not third.done()
        syncs.gate.set()
        await first
        await third
        returned = syncs.events.index(("a3 returned", 0, 0))
        before_return = syncs.events[:returned]
        # the sync under way when it committed (which saw the WAL without it) is not the one it waited for: a
        # sync that started with its commit in the WAL ended before it returned
        assert ("end", started[1], started[2]) in before_return
        assert any(kind == "end" and size >= committed_at for kind, size, _ in before_return)
        assert started[1] < committed_at
    finally:
        if syncs.gate is not None:
            syncs.gate.set()
        await store.close()


async def test_a_burst_of_durable_writes_on_a_warm_store_shares_a_few_syncs(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the WAL is open (a lone write would sync on the loop), 50 concurrent writes still share their syncs
    on the sync thread rather than each holding the loop for one."""
    syncs = Syncs(monkeypatch, Path(f"{store.path}-wal"))
    try:
        await store.put("approvals", "warm", {"state": "pending"})
        await store.put("approvals", "warm", {"state": "pending"})  # (synced on the loop)
        before = len(syncs.of_wal())
        written = await asyncio.gather(*(store.insert("deliveries", f"d{n}", {"n": n}) for n in range(50)))
        assert all(record is not None for record in written)
        assert 1 <= len(syncs.of_wal()) - before < 10
        loop_thread = threading.get_ident()
        assert sum(1 for kind, _, thread in syncs.events if kind == "start" and thread == loop_thread) <= 1
    finally:
        await store.close()


async def test_a_durable_write_made_while_a_store_operation_is_in_flight_syncs_off_the_loop(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a scan running on the pool, a durable write leaves the loop free: its sync runs on the sync thread."""
    syncs = Syncs(monkeypatch, Path(f"{store.path}-wal"))
    release = threading.Event()
    real_scan = store._scan

    def slow_scan(*args: object) -> object:
        assert release.wait(30)
        return real_scan(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "_scan", slow_scan)
    try:
        await store.put("approvals", "warm", {"state": "pending"})
        scanning = asyncio.ensure_future(store.scan("approvals"))
        await asyncio.sleep(0.01)  # the scan is on the pool
        before = len(syncs.events)
        await store.put("approvals", "a1", {"state": "pending"})
        (start, end) = syncs.events[before:]
        assert start[2] == end[2] != threading.get_ident()
        release.set()
        assert len(await scanning) == 2
        before = len(syncs.events)
        await store.put("approvals", "a2", {"state": "pending"})  # alone again: on the loop
        assert [thread for _, _, thread in syncs.events[before:]] == [threading.get_ident()] * 2
    finally:
        release.set()
        await store.close()

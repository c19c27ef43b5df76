"""SQLite's durable writes made on the event loop: each returns only after the WAL holding it was synced, the
syncs of concurrent writes are shared, and a failed sync is an error that names the disk."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from milpa_chat.errors import StoreError
from milpa_chat.store.sqlite import SqliteStore


class Syncs:
    """Records every ``fsync`` the store makes: which file (its inode) and that file's size then."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, wal: Path, *, fail: bool = False) -> None:
        self.calls: list[tuple[int, int]] = []
        self.wal, self.fail = wal, fail
        real = os.fsync

        def fsync(fd: int) -> None:
            synced = os.fstat(fd)
            self.calls.append((synced.st_ino, synced.st_size))
            if self.fail:
                raise OSError(5, "Input/output error")
            real(fd)

        monkeypatch.setattr(os, "fsync", fsync)  # the module _wal_sync calls

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

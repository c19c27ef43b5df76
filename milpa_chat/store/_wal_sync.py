"""Durable commits made on the event loop: a commit on the loop's connection (``synchronous=NORMAL``: it
appends to the WAL file without syncing it) is durable once that file has been synced after it.

:class:`WalSync` syncs the WAL with ``fdatasync`` (``fsync`` where there is none), what SQLite itself does for
the WAL at ``synchronous=FULL`` on Linux: it writes the file's data and the size needed to read it back, not
its times. A caller gets its answer only after a sync that started after its commit has finished, and that sync
covers every commit made before it on the file. That is what ``synchronous=FULL`` guarantees (the WAL synced
before the commit returns, and with it every earlier write). A WAL whose content was moved into the database by
a checkpoint was synced by it, and the database file after it (SQLite does both in WAL mode at ``NORMAL``);
when the WAL file is gone, the database file is synced instead.

Where the sync runs:

* **on the loop itself**, when the write is alone: after one turn of the loop (so that the commits of tasks
  ready to run join it), this loop has no other store operation in flight and no sync round under way. The
  ``fdatasync`` releases the GIL, but the loop waits for it: **the longest the loop is held is one
  fdatasync** of the WAL (about 0.1 ms on a local SSD; the disk's latency in general), less than the hop to a
  thread and back that it replaces (two wake-ups and two GIL hand-offs).
* **on a thread of its own** otherwise (group commit): one sync for every commit waiting when it starts, while
  the loop goes on with the other operations, whose commits the next round covers. A burst of concurrent
  durable writes so shares a few syncs instead of each holding the loop for one. The first sync (which opens
  the WAL file and syncs its directory entry) also runs there.
"""

from __future__ import annotations

import asyncio
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from milpa_chat.store._hop import Workers

__all__ = ["WalSync"]


@dataclass(slots=True)
class _Waiting:
    """One event loop's commits: how many were made, how many a finished sync covers, the sync round under way
    on the thread, and how many of the store's operations on this loop are in flight (awaiting a thread or a
    sync)."""

    committed: int = 0
    synced: int = 0
    round: asyncio.Task[None] | None = None
    operations: int = 0


class WalSync:
    """Syncs the WAL of ``database`` for the commits made on event loops (each loop keeps its own count).

    The store tells it about its other operations in flight on a loop (:meth:`started`, :meth:`finished`): a
    commit syncs on the loop only when nothing else of the store is under way there."""

    def __init__(self, database: Path) -> None:
        self.database = database
        self.wal = Path(f"{database}-wal")
        self._executor = Workers(1, "milpa-sqlite-sync")
        self._local = threading.local()
        self._directory_synced = os.name == "nt"  # (a directory cannot be opened and synced there)
        #: The WAL file, open from the first sync that finds it until close(): SQLite keeps that file (it
        #: restarts it in place after a checkpoint) while any connection is open, and a commit to sync was made
        #: on one of the store's, open until then. Opened on the sync thread only; a loop syncs it once it is
        #: open and its directory entry synced.
        self._fd: int | None = None
        #: Held by a sync made on a loop and by close(), so that the file is not closed under that sync. A loop
        #: never waits for it: one that finds it taken syncs on the thread instead.
        self._inline_lock = threading.Lock()
        self._closed = False

    def started(self) -> None:
        """One more store operation in flight on this thread's loop (one that awaits a thread)."""
        self._waiting().operations += 1

    def finished(self) -> None:
        self._waiting().operations -= 1

    async def committed(self) -> None:
        """Call right after a commit on this loop's connection; returns once the commit is on disk."""
        waiting = self._waiting()
        waiting.committed += 1
        mine = waiting.committed
        waiting.operations += 1
        try:
            if waiting.round is None and self._fd is not None:
                await asyncio.sleep(0)  # one turn: the commits of the tasks ready to run join this one
                if waiting.synced >= mine:  # one of them synced on the loop after this commit
                    return
                if waiting.round is None and waiting.operations == 1 and self._sync_here(waiting):
                    return
            while waiting.synced < mine:
                if waiting.round is None:
                    waiting.round = asyncio.get_running_loop().create_task(self._round(waiting))
                await asyncio.shield(waiting.round)
        finally:
            waiting.operations -= 1

    def close(self) -> None:
        self._executor.close(wait=True)
        with self._inline_lock:
            self._closed = True
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _waiting(self) -> _Waiting:
        waiting: _Waiting | None = getattr(self._local, "waiting", None)
        if waiting is None:
            waiting = self._local.waiting = _Waiting()
        return waiting

    def _sync_here(self, waiting: _Waiting) -> bool:
        """Sync on the calling (loop's) thread; ``False`` when that cannot be done without waiting for a lock
        (another loop's sync, or close(), holds the file), then the thread does it."""
        if not self._inline_lock.acquire(blocking=False):
            return False
        try:
            fd = self._fd
            if fd is None or self._closed or not self._directory_synced:
                return False
            upto = waiting.committed  # every commit counted so far was made before this sync starts
            _sync_data(fd)
            waiting.synced = max(waiting.synced, upto)
            return True
        finally:
            self._inline_lock.release()

    async def _round(self, waiting: _Waiting) -> None:
        upto = waiting.committed  # every commit counted so far was made before this sync starts
        try:
            await self._executor.run(self._sync)
            waiting.synced = max(waiting.synced, upto)
        finally:
            waiting.round = None

    def _sync(self) -> None:
        if self._fd is None:
            try:
                self._fd = os.open(self.wal, os.O_RDWR)
            except FileNotFoundError:  # checkpointed and removed: what it held is in the database file
                _fsync_file(self.database)
        if not self._directory_synced:  # the WAL file's entry in its directory, once (then a loop may sync)
            _fsync_file(self.database.parent, os.O_RDONLY)
            self._directory_synced = True
        if self._fd is not None:
            _sync_data(self._fd)


def _sync_data(fd: int) -> None:
    """The file's data and what reading it needs (its size): ``fdatasync``, as SQLite syncs its WAL on Linux."""
    sync = getattr(os, "fdatasync", None)
    if sync is None:
        os.fsync(fd)
    else:
        sync(fd)


def _fsync_file(path: Path, flags: int = os.O_RDWR) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

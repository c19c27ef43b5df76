"""Durable commits made on the event loop: a commit on the loop's connection (``synchronous=NORMAL``: it
appends to the WAL file without syncing it) is durable once that file has been synced after it.

:class:`WalSync` syncs the WAL on a thread of its own, one ``fsync`` for every commit waiting when it starts
(group commit): a caller gets its answer only after a sync that started after its commit has finished. That is
what ``synchronous=FULL`` guarantees (the WAL synced before the commit returns, and with it every earlier write),
for one thread hop per round instead of a writer thread running each write's statements. A WAL whose content
was moved into the database by a checkpoint was synced by it, and the database file after it (SQLite does both
in WAL mode at ``NORMAL``); when the WAL file is gone, the database file is synced instead.
"""

from __future__ import annotations

import asyncio
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

__all__ = ["WalSync"]


@dataclass(slots=True)
class _Waiting:
    """One event loop's commits: how many were made, how many a finished sync covers, the sync under way."""

    committed: int = 0
    synced: int = 0
    round: asyncio.Task[None] | None = None


class WalSync:
    """Syncs the WAL of ``database`` for the commits made on event loops (each loop keeps its own count)."""

    def __init__(self, database: Path) -> None:
        self.database = database
        self.wal = Path(f"{database}-wal")
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="milpa-sqlite-sync")
        self._local = threading.local()
        self._directory_synced = os.name == "nt"  # (a directory cannot be opened and synced there)
        #: The WAL file, open from the first sync that finds it until close(): SQLite keeps that file (it
        #: restarts it in place after a checkpoint) while any connection is open, and a commit to sync was made
        #: on one of the store's, open until then. Each system call here hands the GIL to the loop and back.
        self._fd: int | None = None

    async def committed(self) -> None:
        """Call right after a commit on this loop's connection; returns once the commit is on disk."""
        waiting = self._waiting()
        waiting.committed += 1
        mine = waiting.committed
        while waiting.synced < mine:
            if waiting.round is None:
                waiting.round = asyncio.get_running_loop().create_task(self._round(waiting))
            await asyncio.shield(waiting.round)

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _waiting(self) -> _Waiting:
        waiting: _Waiting | None = getattr(self._local, "waiting", None)
        if waiting is None:
            waiting = self._local.waiting = _Waiting()
        return waiting

    async def _round(self, waiting: _Waiting) -> None:
        upto = waiting.committed  # every commit counted so far was made before this sync starts
        try:
            await asyncio.get_running_loop().run_in_executor(self._executor, self._sync)
            waiting.synced = max(waiting.synced, upto)
        finally:
            waiting.round = None

    def _sync(self) -> None:
        if self._fd is None:
            try:
                self._fd = os.open(self.wal, os.O_RDWR)
            except FileNotFoundError:  # checkpointed and removed: what it held is in the database file
                _fsync_file(self.database)
        if self._fd is not None:
            os.fsync(self._fd)
        if not self._directory_synced:  # the WAL file's entry in its directory, once
            _fsync_file(self.database.parent, os.O_RDONLY)
            self._directory_synced = True


def _fsync_file(path: Path, flags: int = os.O_RDWR) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

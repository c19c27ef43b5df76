"""How :class:`~milpa_chat.store.sqlite.SqliteStore` runs its statements: on the event loop's connection,
on the thread pool, or on the writer thread, and when it waits for the disk.

Writing or reading one record runs on the event loop itself, on a connection of the loop's thread that commits
with ``synchronous=NORMAL`` and never waits for a lock (:meth:`SqliteConnections._inline`); a durable write
then waits until the WAL is synced (:mod:`milpa_chat.store._wal_sync`). When another writer holds the file, the
statement goes to the thread pool (a write: to the writer thread, :mod:`milpa_chat.store._group_commit`). The
loop's connection never checkpoints the WAL; the pool does, after every ``_CHECKPOINT_EVERY`` of its writes.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar, TypeVarTuple, Unpack

from milpa_chat.errors import StoreError
from milpa_chat.store._group_commit import GroupCommit
from milpa_chat.store._sql import ThreadedStore
from milpa_chat.store._sqlite_file import check_header, initialise, translate
from milpa_chat.store._wal_sync import WalSync
from milpa_chat.store.base import Clock

__all__ = ["SqliteConnections"]

log = logging.getLogger("milpa_chat.store.sqlite")
T = TypeVar("T")
Ts = TypeVarTuple("Ts")

_CHECKPOINT_EVERY = 200  # writes on the event loop's connection between two checkpoints by the pool


class SqliteConnections(ThreadedStore):
    """The connections of one SQLite store file and the ways a statement runs on them (see the module)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Clock = time.time,
        busy_timeout: float = 30.0,
        synchronous: str = "FULL",
    ) -> None:
        self.path = Path(path)
        self.busy_timeout = float(busy_timeout)
        if synchronous.upper() not in ("FULL", "NORMAL"):
            raise StoreError(f"SqliteStore(synchronous=...) is 'FULL' or 'NORMAL', got {synchronous!r}")
        self.synchronous = synchronous.upper()
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._unsynced = 0  # writes on event-loop connections since the pool last checkpointed
        self._checkpointing: Future[None] | None = None  # the pool's checkpoint under way, if any
        self._open_file()
        super().__init__(clock=clock, workers=4, name="milpa-sqlite")
        self._writer = GroupCommit("milpa-sqlite-writer", self._begin_batch, self._translate)
        self._wal = WalSync(self.path)

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"

    def _describe(self) -> str:
        return repr(self)

    # ----------------------------------------------------------- opening
    def _connect(self, timeout: float | None = None) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path,
                timeout=self.busy_timeout if timeout is None else timeout,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.OperationalError as exc:
            raise StoreError(
                f"cannot open SQLite store {str(self.path)!r}: {exc}. Check that the directory "
                f"{str(self.path.parent)!r} exists and is writable."
            ) from exc
        try:
            conn.execute(f"PRAGMA synchronous = {self.synchronous}")
        except sqlite3.Error as exc:
            conn.close()
            raise self._translate(exc) or exc from exc
        return conn

    def _open_file(self) -> None:
        """Check the file is a milpa-chat store (or empty, then create the tables) without writing
        anything to a file that turns out to be foreign."""
        check_header(self.path)
        conn = self._connect()
        try:
            initialise(conn, self.path)
        except sqlite3.Error as exc:
            raise self._translate(exc) or exc from exc
        finally:
            conn.close()  # rolls back anything left uncommitted

    # ------------------------------------------------------- connections
    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    def _loop_conn(self) -> sqlite3.Connection:
        """This thread's connection for statements run on its event loop: it never waits for a lock,
        never checkpoints, and commits with ``synchronous=NORMAL``."""
        conn: sqlite3.Connection | None = getattr(self._local, "loop_conn", None)
        if conn is None:
            # opened waiting for locks like any connection (its first statement reads the schema, which waits
            # while another connection recovers the WAL or checkpoints it); then it never waits
            conn = self._connect()
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA wal_autocheckpoint = 0")
            conn.execute("PRAGMA busy_timeout = 0")
            self._local.loop_conn = conn
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    async def _pooled(self, fn: Callable[[sqlite3.Connection, Unpack[Ts]], T], *args: *Ts) -> T:
        """``fn(conn, *args)`` on a pool thread, with that thread's connection."""
        return await self._run(lambda: fn(self._conn(), *args))

    async def _run(self, fn: Callable[[Unpack[Ts]], T], *args: *Ts) -> T:
        """``fn(*args)`` on the pool, counted as in flight on this loop (a durable write made meanwhile syncs on
        the sync thread rather than holding the loop)."""
        self._wal.started()
        try:
            return await super()._run(fn, *args)
        finally:
            self._wal.finished()

    async def _queued(self, fn: Callable[[Unpack[Ts]], T], *args: *Ts, durable: bool = True) -> T:
        """``fn(*args)`` (a write) on the writer thread, committed with the writes queued beside it."""
        self._check_open()
        try:
            future = self._writer.submit(lambda: fn(*args), durable=durable)
        except RuntimeError as exc:  # a concurrent close() stopped the writer
            raise StoreError(f"{self._describe()} is closed; open a new store to keep working") from exc
        self._wal.started()
        try:
            return await future
        finally:
            self._wal.finished()

    def _begin_batch(self, durable: bool) -> sqlite3.Connection:
        """The writer thread's transaction for one batch, synced as the most demanding write in it needs."""
        conn = self._conn()
        level = self.synchronous if durable else "NORMAL"
        if getattr(self._local, "level", self.synchronous) != level:
            conn.execute(f"PRAGMA synchronous = {level}")
            self._local.level = level
        conn.execute("BEGIN IMMEDIATE")
        return conn

    async def _inline(
        self,
        fn: Callable[[sqlite3.Connection, Unpack[Ts]], T],
        *args: *Ts,
        write: bool = False,
        durable: bool = False,
    ) -> T:
        """``fn(conn, *args)`` on the event loop's connection; on the pool (a write: on the writer thread)
        when the file is locked. ``durable``: a write that returns once the WAL holding it is synced."""
        self._check_open()
        conn = self._loop_conn()
        retried = False
        while True:
            try:
                result = fn(conn, *args)
            except sqlite3.OperationalError as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if not getattr(exc, "sqlite_errorname", "").startswith("SQLITE_BUSY"):
                    raise self._translate(exc) or exc from exc
                checkpoint = self._checkpointing
                if write and not retried and checkpoint is not None and not checkpoint.done():
                    # Our own checkpoint holds the file a moment: write here once it is done, rather than hand
                    # this write (and, while that batch holds the lock, every next one) to the writer thread.
                    retried = True
                    self._wal.started()
                    try:
                        with suppress(Exception):  # (it logs its own failures)
                            await asyncio.wrap_future(checkpoint)
                    finally:
                        self._wal.finished()
                    continue
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise self._translate(exc) or exc from exc
            else:
                if write:
                    self._wrote_inline()
                if durable:
                    await self._synced()
                return result
            break
        if write:
            return await self._queued(lambda: fn(self._conn(), *args), durable=durable)
        return await self._pooled(fn, *args)

    def _syncs(self, durable: bool = True) -> bool:
        """Whether a write waits for the disk: a durable one on a ``synchronous="FULL"`` store."""
        return durable and self.synchronous == "FULL"

    async def _synced(self) -> None:
        """Wait until the commit just made on the loop's connection is on disk (the WAL synced after it)."""
        try:
            await self._wal.committed()
        except OSError as exc:
            raise StoreError(
                f"{self._describe()}: the write was made but syncing it to disk failed ({exc}); "
                "check the disk and the file's permissions"
            ) from exc

    def _wrote_inline(self) -> None:
        """Count a commit made on an event-loop connection; every ``_CHECKPOINT_EVERY`` of them, have the
        pool checkpoint the WAL (those connections never do, so that no sync happens on the loop)."""
        self._unsynced += 1
        if self._unsynced < _CHECKPOINT_EVERY:
            return
        self._unsynced = 0
        with suppress(RuntimeError):  # closing: the pool's own commits checkpoint
            self._checkpointing = self._executor.submit(self._checkpoint)

    def _checkpoint(self) -> None:
        """Copy the WAL into the database and have the next writer start it over (``RESTART``: writers
        wait meanwhile, at most 100 ms; a passive checkpoint would never catch up with a busy loop)."""
        conn = self._conn()
        try:
            conn.execute("PRAGMA busy_timeout = 100")
            conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchall()
        except sqlite3.Error as exc:  # another checkpoint or a long reader: the next one will do it
            log.debug("WAL checkpoint of %s skipped: %s", self.path, exc)
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")

    @contextmanager
    def _write(self, conn: sqlite3.Connection | None = None) -> Iterator[sqlite3.Connection]:
        """One write on ``conn`` (this thread's connection by default): in the writer thread's batch, a
        savepoint of it (this write alone undone on failure); outside a transaction, one ``BEGIN IMMEDIATE``
        transaction."""
        db: sqlite3.Connection = self._conn() if conn is None else conn
        if db.in_transaction:  # the writer thread's batch: this write alone in a savepoint of it
            db.execute("SAVEPOINT milpa_write")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK TO milpa_write")
                db.execute("RELEASE milpa_write")
                raise
            db.execute("RELEASE milpa_write")
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def _record_write(
        self, conn: sqlite3.Connection, sql: str, params: tuple[Any, ...], *, rows: bool = True
    ) -> list[Any]:
        """The one statement of a record's write: its rows, or (``rows=False``, a statement returning none)
        one per record it changed. On the event loop's connection (no transaction open) it is a transaction of
        its own: SQLite takes the write lock for it (or fails at once, the file being busy) and commits it as
        it finishes, the same as ``BEGIN IMMEDIATE`` … ``COMMIT`` around it, for one call instead of three.
        In the writer thread's batch: in a savepoint of it (:meth:`_write`)."""
        if not conn.in_transaction:
            cursor = conn.execute(sql, params)
            return cursor.fetchall() if rows else [None] * cursor.rowcount
        with self._write(conn):
            cursor = conn.execute(sql, params)
            return cursor.fetchall() if rows else [None] * cursor.rowcount

    def _translate(self, exc: Exception) -> StoreError | None:
        return translate(exc, self.path, self.busy_timeout)

    def _release(self) -> None:
        self._writer.stop()  # the writes queued before close() are committed first
        self._wal.close()
        with self._conns_lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            conn.close()

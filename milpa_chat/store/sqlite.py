"""``SqliteStore``: the default backend — one SQLite file in WAL mode, safe across threads and processes.

Writing or reading one record runs on the event loop itself, on a connection of the loop's thread that
commits with ``synchronous=NORMAL`` (it appends to the WAL without syncing it) and never waits for a lock:
``get``, and ``insert``/``put``/``update``/``take``/``delete``, each one statement that is its own transaction.
A durable one of those writes (``synchronous="FULL"``, the default, and not ``durable=False``) then waits until
the WAL file has been synced after its commit (:mod:`milpa_chat.store._wal_sync`: one ``fdatasync``, made by the
loop itself when nothing else of the store is in flight on it, so the loop is held for one sync at most; else
on a thread of its own, one for every commit waiting when it starts), so it returns once it is on disk, as with
``synchronous=FULL``. When another writer holds the file, the operation goes to the thread pool (a write: to
the writer thread) and waits there, so the loop never blocks on a lock. The loop's connection never
checkpoints the WAL (which would write and sync the database file); the pool does, after every 200 of its
writes.

Scans, streams and rate windows run on a small thread pool (reads, one connection per thread) and one writer
thread that commits the writes queued while its previous commit was syncing together, one transaction and one
sync for all of them, each write in a savepoint of its own (group commit, :mod:`milpa_chat.store._group_commit`):
every caller still gets its answer only once its write is committed.

Each write that must happen once is a single ``BEGIN IMMEDIATE`` transaction, so any number of stores,
threads and processes may share the file. A durable write is on disk when it returns, and with it every
earlier write, durable or not; a ``durable=False`` one survives a crash of the process, not a power cut.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar, TypeVarTuple, Unpack

from milpa_chat.errors import StoreError
from milpa_chat.store._group_commit import GroupCommit
from milpa_chat.store._sql import (
    ThreadedStore,
    decode,
    encode,
    is_live,
    matches,
    rate_decision,
    to_record,
)
from milpa_chat.store._sqlite_file import check_header, initialise, translate
from milpa_chat.store._sqlite_sql import (
    DELETE,
    DUE,
    GET,
    INSERT,
    PUT,
    TAKE,
    TAKE_VERSION,
    UPDATE,
    UPDATE_ANY,
    scan_query,
)
from milpa_chat.store._wal_sync import WalSync
from milpa_chat.store.base import KEEP, Clock, Due, RateDecision, Record, StreamEntry, check_due, expiry

__all__ = ["SqliteStore"]

log = logging.getLogger(__name__)
T = TypeVar("T")
Ts = TypeVarTuple("Ts")

_CHECKPOINT_EVERY = 200  # writes on the event loop's connection between two checkpoints by the pool


class SqliteStore(ThreadedStore):
    """Durable store in one SQLite file (created with its tables when absent).

    ``busy_timeout`` is how long a write waits for another writer before failing. ``synchronous``:
    ``"FULL"`` (the default) makes every commit durable against power loss (the WAL synced before it returns),
    except the writes made with ``durable=False``; ``"NORMAL"`` in WAL mode survives any process
    crash (SIGKILL included) but may lose the last commits on power loss or an OS crash, for writes
    several times faster.
    Raises :class:`StoreCorruptError` when the file is not a SQLite database and
    :class:`StoreSchemaError` when it belongs to another application; neither touches the file.
    """

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
            conn = self._connect(timeout=0.0)
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA wal_autocheckpoint = 0")
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

    async def close(self) -> None:
        await self._shutdown(self._release)

    # ----------------------------------------------------------- records
    async def get(self, collection: str, key: str) -> Record | None:
        return await self._inline(self._get, collection, key)

    def _get(self, conn: sqlite3.Connection, collection: str, key: str) -> Record | None:
        row = conn.execute(GET, (collection, key, self.clock())).fetchone()
        return None if row is None else to_record(collection, row)

    async def insert(
        self,
        collection: str,
        key: str,
        value: Mapping[str, Any],
        *,
        ttl: float | None = None,
        due: float | None = None,
        durable: bool = True,
    ) -> Record | None:
        text = encode(collection, key, value)
        expiry(0.0, ttl)
        check_due(due)
        return await self._inline(
            self._insert, collection, key, text, ttl, due, write=True, durable=self._syncs(durable)
        )

    def _insert(
        self,
        conn: sqlite3.Connection,
        collection: str,
        key: str,
        text: str,
        ttl: float | None,
        due: float | None,
    ) -> Record | None:
        now = float(self.clock())
        exp = expiry(now, ttl)
        due = None if due is None else float(due)
        if not self._record_write(conn, INSERT, (collection, key, text, now, exp, due), rows=False):
            return None
        return Record.from_text(collection, key, text, 1, now, now, exp, due)

    async def put(
        self,
        collection: str,
        key: str,
        value: Mapping[str, Any],
        *,
        ttl: float | None = None,
        due: float | None = None,
        durable: bool = True,
    ) -> Record:
        text = encode(collection, key, value)
        expiry(0.0, ttl)
        check_due(due)
        return await self._inline(self._put, collection, key, text, ttl, due, write=True, durable=self._syncs(durable))

    def _put(
        self,
        conn: sqlite3.Connection,
        collection: str,
        key: str,
        text: str,
        ttl: float | None,
        due: float | None,
    ) -> Record:
        now = float(self.clock())
        exp = expiry(now, ttl)
        due = None if due is None else float(due)
        ((version, created_at),) = self._record_write(conn, PUT, (collection, key, text, now, exp, due))
        return Record.from_text(collection, key, text, version, created_at, now, exp, due)

    async def update(
        self,
        collection: str,
        key: str,
        value: Mapping[str, Any],
        *,
        expected_version: int,
        ttl: float | None = None,
        due: Due = KEEP,
        durable: bool = True,
    ) -> Record | None:
        text = encode(collection, key, value)
        expiry(0.0, ttl)
        check_due(due)
        return await self._inline(
            self._update, collection, key, text, expected_version, ttl, due, write=True, durable=self._syncs(durable)
        )

    def _update(
        self,
        conn: sqlite3.Connection,
        collection: str,
        key: str,
        text: str,
        expected: int,
        ttl: float | None,
        due: Due,
    ) -> Record | None:
        now = float(self.clock())
        keeps = (ttl is None, due is KEEP)
        params: tuple[Any, ...] = (text, now, collection, key, expected)
        if ttl is not None:
            exp = expiry(now, ttl)
            params += (exp,)
        if due is not KEEP:
            due = None if due is None else float(due)
            params += (due,)
        if expected.__class__ is int:  # the new version is the next one: not read back
            rows = self._record_write(conn, UPDATE[keeps], params)
            if not rows:
                return None
            row = rows[0]
            version = expected + 1
        else:
            rows = self._record_write(conn, UPDATE_ANY[keeps], params)
            if not rows:
                return None
            row = rows[0]
            version = row[-1]
        return Record.from_text(
            collection,
            key,
            text,
            version,
            row[0],
            now,
            row[1] if ttl is None else exp,
            row[1 + (ttl is None)] if due is KEEP else due,
        )

    async def take(self, collection: str, key: str, *, expected_version: int | None = None) -> Record | None:
        return await self._inline(self._take, collection, key, expected_version, write=True, durable=self._syncs())

    def _take(self, conn: sqlite3.Connection, collection: str, key: str, expected: int | None) -> Record | None:
        if expected is None:
            rows = self._record_write(conn, TAKE, (collection, key, self.clock()))
        else:
            rows = self._record_write(conn, TAKE_VERSION, (collection, key, self.clock(), expected))
        return to_record(collection, rows[0]) if rows else None

    async def delete(self, collection: str, key: str) -> bool:
        return await self._inline(self._delete, collection, key, write=True, durable=self._syncs())

    def _delete(self, conn: sqlite3.Connection, collection: str, key: str) -> bool:
        rows = self._record_write(conn, DELETE, (collection, key))
        return bool(rows) and is_live(rows[0][0], self.clock())

    async def scan(
        self,
        collection: str,
        *,
        where: Mapping[str, Any] | None = None,
        prefix: str = "",
        limit: int | None = None,
    ) -> list[Record]:
        return await self._run(self._scan, collection, dict(where or {}), prefix, limit)

    def _scan(self, collection: str, where: dict[str, Any], prefix: str, limit: int | None) -> list[Record]:
        if limit is not None and limit <= 0:
            return []
        sql, params = scan_query(collection, where, prefix, self.clock())
        out: list[Record] = []
        cursor = self._conn().execute(sql, params)
        try:
            for row in cursor:
                record = to_record(collection, row)
                if matches(record.value, where):
                    out.append(record)
                    if limit is not None and len(out) >= limit:
                        break
        finally:
            cursor.close()
        return out

    async def due(self, collection: str, *, before: float, limit: int = 100) -> list[Record]:
        return await self._run(self._due, collection, before, limit)

    def _due(self, collection: str, before: float, limit: int) -> list[Record]:
        rows = self._conn().execute(DUE, (collection, before, self.clock(), max(0, limit))).fetchall()
        return [to_record(collection, row) for row in rows]

    # ----------------------------------------------------------- streams
    async def append(self, stream: str, value: Mapping[str, Any]) -> StreamEntry:
        text = encode(stream, "append", value)
        return await self._queued(self._append, stream, text)

    def _append(self, stream: str, text: str) -> StreamEntry:
        with self._write() as conn:
            ((seq,),) = conn.execute(
                "INSERT INTO milpa_stream_heads VALUES (?, 1) "
                "ON CONFLICT (stream) DO UPDATE SET seq = seq + 1 RETURNING seq",
                (stream,),
            ).fetchall()
            at = self.clock()
            conn.execute("INSERT INTO milpa_streams VALUES (?, ?, ?, ?)", (stream, seq, text, at))
        return StreamEntry(stream, int(seq), decode(text), at)

    async def read(self, stream: str, *, after: int = 0, limit: int | None = None) -> list[StreamEntry]:
        return await self._run(self._read, stream, after, limit)

    def _read(self, stream: str, after: int, limit: int | None) -> list[StreamEntry]:
        rows = (
            self._conn()
            .execute(
                "SELECT seq, value, at FROM milpa_streams WHERE stream = ? AND seq > ? ORDER BY seq LIMIT ?",
                (stream, after, -1 if limit is None else max(0, limit)),
            )
            .fetchall()
        )
        return [StreamEntry(stream, int(seq), decode(value), float(at)) for seq, value, at in rows]

    async def trim(self, stream: str, *, keep_last: int) -> int:
        return await self._queued(self._trim, stream, keep_last)

    def _trim(self, stream: str, keep_last: int) -> int:
        with self._write() as conn:
            cursor = conn.execute(
                "DELETE FROM milpa_streams WHERE stream = :s AND seq <= (SELECT seq FROM milpa_streams "
                "WHERE stream = :s ORDER BY seq DESC LIMIT 1 OFFSET :keep)",
                {"s": stream, "keep": max(0, keep_last)},
            )
            return cursor.rowcount

    # ------------------------------------------------------------- rates
    async def hit(self, key: str, *, cost: int, limit: int, window: float) -> RateDecision:
        return await self._queued(self._hit, key, cost, limit, window)

    def _hit(self, key: str, cost: int, limit: int, window: float) -> RateDecision:
        with self._write() as conn:
            now = self.clock()
            conn.execute("DELETE FROM milpa_hits WHERE key = ? AND at <= ?", (key, now - window))
            hits = conn.execute("SELECT at, cost FROM milpa_hits WHERE key = ? ORDER BY at, id", (key,)).fetchall()
            decision = rate_decision(hits, cost=cost, limit=limit, window=window, now=now)
            if decision.allowed:
                conn.execute(
                    "INSERT INTO milpa_hits (key, at, cost, expires_at) VALUES (?, ?, ?, ?)",
                    (key, now, cost, now + window),
                )
        return decision

    async def purge_expired(self) -> int:
        return await self._queued(self._purge)

    def _purge(self) -> int:
        with self._write() as conn:
            now = self.clock()
            n = conn.execute(
                "DELETE FROM milpa_records WHERE expires_at IS NOT NULL AND expires_at <= ?", (now,)
            ).rowcount
            conn.execute("DELETE FROM milpa_hits WHERE expires_at <= ?", (now,))
        return n

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
writes (:mod:`milpa_chat.store._sqlite_conn`).

Scans, streams and rate windows run on a small thread pool (reads, one connection per thread) and one writer
thread that commits the writes queued while its previous commit was syncing together, one transaction and one
sync for all of them, each write in a savepoint of its own (group commit, :mod:`milpa_chat.store._group_commit`):
every caller still gets its answer only once its write is committed.

Each write that must happen once is a single ``BEGIN IMMEDIATE`` transaction, so any number of stores,
threads and processes may share the file. A durable write is on disk when it returns, and with it every
earlier write, durable or not; a ``durable=False`` one survives a crash of the process, not a power cut.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from milpa_chat.store._sql import (
    decode,
    encode,
    is_live,
    matches,
    rate_decision,
    to_record,
)
from milpa_chat.store._sqlite_conn import SqliteConnections
from milpa_chat.store._sqlite_sql import (
    DELETE,
    DUE,
    GET,
    INSERT,
    INSERT_NEW,
    PUT,
    TAKE,
    TAKE_VERSION,
    UPDATE,
    UPDATE_ANY,
    scan_query,
)
from milpa_chat.store.base import KEEP, Due, RateDecision, Record, StreamEntry, check_due, check_inserts, expiry

__all__ = ["SqliteStore"]


class _Lost(Exception):
    """An ``update_with`` whose record moved or is gone: its transaction is rolled back."""


class SqliteStore(SqliteConnections):
    """Durable store in one SQLite file (created with its tables when absent).

    ``busy_timeout`` is how long a write waits for another writer before failing. ``synchronous``:
    ``"FULL"`` (the default) makes every commit durable against power loss (the WAL synced before it returns),
    except the writes made with ``durable=False``; ``"NORMAL"`` in WAL mode survives any process
    crash (SIGKILL included) but may lose the last commits on power loss or an OS crash, for writes
    several times faster.
    Raises :class:`StoreCorruptError` when the file is not a SQLite database and
    :class:`StoreSchemaError` when it belongs to another application; neither touches the file.
    """

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
        exp = None
        if ttl is not None:
            exp = expiry(now, ttl)
            params += (exp,)
        if due is not KEEP:
            due = None if due is None else float(due)
            params += (due,)
        exact = expected.__class__ is int  # the new version is the next one: not read back
        rows = self._record_write(conn, (UPDATE if exact else UPDATE_ANY)[keeps], params)
        if not rows:
            return None
        row = rows[0]
        return Record.from_text(
            collection,
            key,
            text,
            expected + 1 if exact else row[-1],
            row[0],
            now,
            row[1] if ttl is None else exp,
            row[1 + (ttl is None)] if due is KEEP else due,
        )

    async def update_with(
        self,
        collection: str,
        key: str,
        value: Mapping[str, Any],
        *,
        expected_version: int,
        inserts: Sequence[tuple[str, str, Mapping[str, Any]]],
        durable: bool = True,
    ) -> Record | None:
        text = encode(collection, key, value)
        made = [(c, k, encode(c, k, v)) for c, k, v in check_inserts(collection, key, inserts)]
        return await self._inline(
            self._update_with, collection, key, text, expected_version, made, write=True, durable=self._syncs(durable)
        )

    def _update_with(
        self,
        conn: sqlite3.Connection,
        collection: str,
        key: str,
        text: str,
        expected: int,
        made: list[tuple[str, str, str]],
    ) -> Record | None:
        now = float(self.clock())
        try:
            with self._write(conn) as db:  # one transaction (a savepoint of the writer thread's batch)
                rows = db.execute(
                    UPDATE_ANY[True, True], (text, now, collection, key, expected)
                ).fetchall()  # returns (created_at, expires_at, due, version)
                if not rows:
                    raise _Lost
                db.executemany(INSERT_NEW, [(c, k, t, now) for c, k, t in made])
        except (_Lost, sqlite3.IntegrityError):  # moved, gone, or a key taken: rolled back, nothing written
            return None
        created_at, expires_at, due, version = rows[0]
        return Record.from_text(collection, key, text, version, created_at, now, expires_at, due)

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

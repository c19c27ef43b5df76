"""``PostgresStore``: one database shared by several bot workers.

Reading or writing one record (``get``, ``insert``, ``put``, ``update``, ``take``, ``delete``) runs on the
event loop itself, on an asynchronous psycopg connection that loop owns (two: one for durable statements,
one opened with ``synchronous_commit = off`` for ``durable=False`` writes), each statement prepared once:
no thread hop, no pool check, one round trip. While the loop's connection is busy with another call, not
open yet, or found dropped, the call goes to the pool. Everything else (scans, streams, rate windows,
purges) runs on psycopg connections in a small pool, driven from a dedicated thread pool so the event loop
never blocks. Every write that must happen once is one atomic statement (``INSERT ... ON CONFLICT``,
``UPDATE ... WHERE version = ...``, ``DELETE ... RETURNING``) or, for rate windows, a short
transaction holding a per-key advisory lock. Tables are named ``milpa_*`` in the given schema (created or
upgraded by ``_postgres_schema``); the loop's own connections are ``_postgres_loop``'s, the pools ``_postgres_pools``'s.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from milpa_chat._extras import require
from milpa_chat.errors import StoreError
from milpa_chat.store._sql import (
    decode,
    encode,
    is_live,
    matches,
    prefilters,
    prefix_upper,
    rate_decision,
    to_record,
)
from milpa_chat.store.base import (
    KEEP,
    Clock,
    Due,
    RateDecision,
    Record,
    StreamEntry,
    check_due,
    check_inserts,
    expiry,
)

require("psycopg", extra="postgres", feature="PostgresStore")
require("psycopg_pool", extra="postgres", feature="PostgresStore")

import psycopg  # noqa: E402
from psycopg import sql  # noqa: E402
from psycopg.conninfo import conninfo_to_dict  # noqa: E402
from psycopg_pool import ConnectionPool  # noqa: E402

from milpa_chat.store._postgres_loop import Link  # noqa: E402
from milpa_chat.store._postgres_pools import PooledLinks  # noqa: E402
from milpa_chat.store._postgres_schema import TABLES, initialise, lock_id  # noqa: E402

__all__ = ["PostgresStore"]

_COLS = "key, value::text, version, created_at, updated_at, expires_at, due"
_LIVE = "({t}.expires_at IS NULL OR {t}.expires_at > %(now)s)"


def describe_dsn(dsn: str) -> str:
    """``user@host:port/dbname`` of a DSN, never its password."""
    try:
        info = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "<unparsable DSN>"
    return f"{info.get('user', '')}@{info.get('host', 'localhost')}:{info.get('port', 5432)}/{info.get('dbname', '')}"


class PostgresStore(PooledLinks):
    """Durable store in PostgreSQL; creates ``schema`` and its ``milpa_*`` tables when absent.

    Raises :class:`StoreError` when the server cannot be reached and :class:`StoreSchemaError`
    when the schema already holds tables of another application or of a newer milpa-chat.
    While the database is away calls fail fast with a :class:`StoreError` saying so (the first after
    half a second, the others at once); within a tenth of a second of its return work resumes (a
    fresh pool instead of psycopg_pool's growing back-off). Connections the server dropped are
    replaced before use. ``wait``: seconds a call waits for a free connection while the server is there.
    """

    def __init__(
        self,
        dsn: str,
        *,
        clock: Clock = time.time,
        schema: str = "public",
        min_size: int = 1,
        max_size: int = 10,
        wait: float = 5.0,
    ) -> None:
        self.schema = schema
        self._where = f"PostgreSQL {describe_dsn(dsn)} schema {schema!r}"
        self._cache: dict[str, bytes] = {}
        self._q = {name: sql.Identifier(schema, table) for name, table in TABLES.items()}
        initialise(dsn, schema, self._q, self._where)
        self._dsn, self._wait, self._sizes = dsn, wait, (min_size, max_size)
        self._kwargs: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": 3,
            "application_name": f"milpa-{schema}"[:63],
        }
        #: While the database is away: since when (monotonic), the last error, and one probe at a time.
        self._away: tuple[float, str] | None = None
        self._probing = threading.Lock()
        self._probed_at = 0.0
        self._pool = self._new_pool()
        #: Connections whose commits do not wait for the WAL flush (``synchronous_commit = off``), for the writes
        #: made with ``durable=False``; opened on the first such write.
        self._lazy_pool: ConnectionPool[psycopg.Connection[Any]] | None = None
        self._lazy_lock = threading.Lock()
        #: Each event loop's own connections, by (loop, durable); the last pair looked up, to skip the dict.
        self._links: dict[tuple[asyncio.AbstractEventLoop, bool], Link] = {}
        self._links_lock = threading.Lock()
        try:
            self._pool.open(wait=True, timeout=30.0)
        except Exception as exc:
            self._pool.close()
            raise StoreError(f"cannot open connections to {self._where}: {exc}") from exc
        super().__init__(clock=clock, workers=max_size, name="milpa-postgres")

    def __repr__(self) -> str:
        return f"PostgresStore({self._where})"

    def _describe(self) -> str:
        return repr(self)

    def _sql(self, template: str) -> bytes:
        """The statement for ``template`` with this schema's table names, composed once."""
        query = self._cache.get(template)
        if query is None:
            live = _LIVE.replace("{t}", "{records}")
            query = sql.SQL(template.replace("{live}", live)).format(**self._q).as_bytes(None)
            self._cache[template] = query
        return query

    async def close(self) -> None:
        def close_pools() -> None:
            lazy = self._lazy_pool
            if lazy is not None:
                lazy.close()
            self._pool.close()

        closing = not self._closed
        await self._shutdown(close_pools)
        if closing:
            self._close_links()

    # ----------------------------------------------------------- records
    async def get(self, collection: str, key: str) -> Record | None:
        query = self._sql(f"SELECT {_COLS} FROM {{records}} WHERE collection = %(c)s AND key = %(k)s AND {{live}}")
        row = await self._row(query, lambda: {"c": collection, "k": key, "now": self.clock()}, read=True)
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
        # durable=False: committed on a connection with synchronous_commit off (no wait for the WAL flush)
        text = encode(collection, key, value)
        expiry(0.0, ttl)
        check_due(due)
        query = self._sql(
            "INSERT INTO {records} AS r VALUES (%(c)s, %(k)s, %(v)s::json, 1, %(now)s, %(now)s, %(exp)s, "
            "%(due)s::double precision) "
            "ON CONFLICT (collection, key) DO UPDATE SET value = EXCLUDED.value, version = 1, "
            "created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at, expires_at = EXCLUDED.expires_at, "
            f"due = EXCLUDED.due WHERE NOT {_LIVE.format(t='r')} RETURNING {_COLS}"
        )
        params = {"c": collection, "k": key, "v": text, "due": due}
        return await self._write(collection, query, params, ttl, durable)

    async def _write(
        self, collection: str, query: bytes, params: dict[str, Any], ttl: float | None, durable: bool
    ) -> Record | None:
        def stamped() -> dict[str, Any]:
            now = self.clock()
            return {**params, "now": now, "exp": expiry(now, ttl), "keep": ttl is None}

        row = await self._row(query, stamped, durable=durable)
        return None if row is None else to_record(collection, row)

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
        live = _LIVE.format(t="r")
        query = self._sql(
            "INSERT INTO {records} AS r VALUES (%(c)s, %(k)s, %(v)s::json, 1, %(now)s, %(now)s, %(exp)s, "
            "%(due)s::double precision) "
            "ON CONFLICT (collection, key) DO UPDATE SET value = EXCLUDED.value, "
            f"version = CASE WHEN {live} THEN r.version + 1 ELSE 1 END, "
            f"created_at = CASE WHEN {live} THEN r.created_at ELSE EXCLUDED.created_at END, "
            f"updated_at = EXCLUDED.updated_at, expires_at = EXCLUDED.expires_at, due = EXCLUDED.due "
            f"RETURNING {_COLS}"
        )
        params = {"c": collection, "k": key, "v": text, "due": due}
        record = await self._write(collection, query, params, ttl, durable)
        assert record is not None
        return record

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
        # durable=False: as for insert
        text = encode(collection, key, value)
        expiry(0.0, ttl)
        check_due(due)
        query = self._sql(
            "UPDATE {records} SET value = %(v)s::json, version = version + 1, updated_at = %(now)s, "
            "expires_at = CASE WHEN %(keep)s THEN expires_at ELSE %(exp)s::double precision END, "
            "due = CASE WHEN %(keep_due)s THEN due ELSE %(due)s::double precision END "
            f"WHERE collection = %(c)s AND key = %(k)s AND version = %(ver)s AND {{live}} RETURNING {_COLS}"
        )
        params = {
            "c": collection,
            "k": key,
            "v": text,
            "ver": expected_version,
            "keep_due": due is KEEP,
            "due": None if due is KEEP else due,
        }
        return await self._write(collection, query, params, ttl, durable)

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
        # one statement: the compare-and-set, then the inserts only if it moved the record; a key already taken
        # fails the whole statement (a plain INSERT's unique violation), so nothing of it is written
        text = encode(collection, key, value)
        made = [(c, k, encode(c, k, v)) for c, k, v in check_inserts(collection, key, inserts)]
        query = self._sql(
            "WITH moved AS (UPDATE {records} SET value = %(v)s::json, version = version + 1, updated_at = %(now)s "
            f"WHERE collection = %(c)s AND key = %(k)s AND version = %(ver)s AND {{live}} RETURNING {_COLS}), "
            "made AS (INSERT INTO {records} (collection, key, value, version, created_at, updated_at) "
            "SELECT x.c, x.k, x.v::json, 1, %(now)s, %(now)s "
            "FROM unnest(%(cs)s::text[], %(ks)s::text[], %(vs)s::text[]) AS x(c, k, v) "
            "WHERE EXISTS (SELECT FROM moved)) "
            "SELECT * FROM moved"
        )
        params = {
            "c": collection,
            "k": key,
            "v": text,
            "ver": expected_version,
            "cs": [c for c, _, _ in made],
            "ks": [k for _, k, _ in made],
            "vs": [t for _, _, t in made],
        }
        try:
            return await self._write(collection, query, params, None, durable)
        except StoreError as exc:
            if isinstance(exc.__cause__, psycopg.errors.UniqueViolation):  # a key taken: nothing was written
                return None
            raise

    async def take(self, collection: str, key: str, *, expected_version: int | None = None) -> Record | None:
        version = "" if expected_version is None else " AND version = %(ver)s"
        query = self._sql(
            f"DELETE FROM {{records}} WHERE collection = %(c)s AND key = %(k)s AND {{live}}{version} RETURNING {_COLS}"
        )
        row = await self._row(query, lambda: {"c": collection, "k": key, "ver": expected_version, "now": self.clock()})
        return None if row is None else to_record(collection, row)

    async def delete(self, collection: str, key: str) -> bool:
        query = self._sql("DELETE FROM {records} WHERE collection = %(c)s AND key = %(k)s RETURNING expires_at")
        row = await self._row(query, lambda: {"c": collection, "k": key})
        return row is not None and is_live(row[0], self.clock())

    async def scan(
        self,
        collection: str,
        *,
        where: Mapping[str, Any] | None = None,
        prefix: str = "",
        limit: int | None = None,
    ) -> list[Record]:
        return await self._run(self._scan, collection, dict(where or {}), prefix, limit)

    def _scan_query(self, where: dict[str, Any], prefix: str) -> tuple[bytes, dict[str, Any]]:
        text = f"SELECT {_COLS} FROM {{records}} WHERE collection = %(c)s AND key > %(after)s AND {{live}}"
        params: dict[str, Any] = {"lo": prefix}
        if prefix:
            text += " AND key >= %(lo)s"
        upper = prefix_upper(prefix)
        if upper is not None:
            text += " AND key < %(hi)s"
            params["hi"] = upper
        for i, needle in enumerate(prefilters(where)):
            text += f" AND strpos(value::text, %(w{i})s) > 0"
            params[f"w{i}"] = needle
        return self._sql(text + " ORDER BY key LIMIT %(batch)s"), params

    def _scan(self, collection: str, where: dict[str, Any], prefix: str, limit: int | None) -> list[Record]:
        if limit is not None and limit <= 0:
            return []
        query, params = self._scan_query(where, prefix)
        batch = 500 if limit is None else max(limit, 100)
        params.update(c=collection, now=self.clock(), after="", batch=batch)
        out: list[Record] = []
        with self._connection() as conn:
            while True:
                rows = conn.execute(query, params).fetchall()
                for row in rows:
                    record = to_record(collection, row)
                    if matches(record.value, where):
                        out.append(record)
                        if limit is not None and len(out) >= limit:
                            return out
                if len(rows) < batch:
                    return out
                params["after"] = rows[-1][0]

    async def due(self, collection: str, *, before: float, limit: int = 100) -> list[Record]:
        query = self._sql(
            f"SELECT {_COLS} FROM {{records}} WHERE collection = %(c)s AND due IS NOT NULL "
            "AND due <= %(before)s AND {live} ORDER BY due, key LIMIT %(limit)s"
        )
        params = {"c": collection, "before": before, "limit": max(0, limit)}
        return await self._run(self._due, collection, query, params)

    def _due(self, collection: str, query: bytes, params: dict[str, Any]) -> list[Record]:
        with self._connection() as conn:
            rows = conn.execute(query, {**params, "now": self.clock()}).fetchall()
        return [to_record(collection, row) for row in rows]

    # ----------------------------------------------------------- streams
    async def append(self, stream: str, value: Mapping[str, Any]) -> StreamEntry:
        text = encode(stream, "append", value)
        query = self._sql(
            "WITH h AS (INSERT INTO {heads} AS h VALUES (%(s)s, 1) "
            "ON CONFLICT (stream) DO UPDATE SET seq = h.seq + 1 RETURNING seq) "
            "INSERT INTO {streams} SELECT %(s)s, h.seq, %(v)s::json, %(at)s FROM h RETURNING seq, value::text, at"
        )
        return await self._run(self._append, stream, query, text)

    def _append(self, stream: str, query: bytes, text: str) -> StreamEntry:
        row = self._one(query, {"s": stream, "v": text, "at": self.clock()})
        assert row is not None
        seq, value, at = row
        return StreamEntry(stream, int(seq), decode(value), float(at))

    async def read(self, stream: str, *, after: int = 0, limit: int | None = None) -> list[StreamEntry]:
        query = self._sql(
            "SELECT seq, value::text, at FROM {streams} WHERE stream = %(s)s AND seq > %(after)s "
            "ORDER BY seq LIMIT %(limit)s::bigint"
        )
        params = {"s": stream, "after": after, "limit": None if limit is None else max(0, limit)}
        return await self._run(self._read, stream, query, params)

    def _read(self, stream: str, query: bytes, params: dict[str, Any]) -> list[StreamEntry]:
        with self._connection() as conn:
            rows = conn.execute(query, params).fetchall()
        return [StreamEntry(stream, int(seq), decode(value), float(at)) for seq, value, at in rows]

    async def trim(self, stream: str, *, keep_last: int) -> int:
        query = self._sql(
            "DELETE FROM {streams} WHERE stream = %(s)s AND seq <= (SELECT seq FROM {streams} "
            "WHERE stream = %(s)s ORDER BY seq DESC OFFSET %(keep)s LIMIT 1)"
        )
        return await self._run(self._rowcount, query, {"s": stream, "keep": max(0, keep_last)})

    def _rowcount(self, query: bytes, params: dict[str, Any]) -> int:
        with self._connection() as conn:
            return conn.execute(query, params).rowcount

    # ------------------------------------------------------------- rates
    async def hit(self, key: str, *, cost: int, limit: int, window: float) -> RateDecision:
        return await self._run(self._hit, key, cost, limit, window)

    def _hit(self, key: str, cost: int, limit: int, window: float) -> RateDecision:
        with self._connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_id("milpa-hit", self.schema, key),))
            now = self.clock()
            params = {"k": key, "now": now, "cut": now - window, "cost": cost, "exp": now + window}
            conn.execute(self._sql("DELETE FROM {hits} WHERE key = %(k)s AND at <= %(cut)s"), params)
            hits = conn.execute(self._sql("SELECT at, cost FROM {hits} WHERE key = %(k)s ORDER BY at, id"), params)
            decision = rate_decision(hits.fetchall(), cost=cost, limit=limit, window=window, now=now)
            if decision.allowed:
                conn.execute(
                    self._sql(
                        "INSERT INTO {hits} (key, at, cost, expires_at) VALUES (%(k)s, %(now)s, %(cost)s, %(exp)s)"
                    ),
                    params,
                )
        return decision

    async def purge_expired(self) -> int:
        return await self._run(self._purge)

    def _purge(self) -> int:
        params = {"now": self.clock()}
        with self._connection() as conn, conn.transaction():
            n = conn.execute(
                self._sql("DELETE FROM {records} WHERE expires_at IS NOT NULL AND expires_at <= %(now)s"), params
            ).rowcount
            conn.execute(self._sql("DELETE FROM {hits} WHERE expires_at <= %(now)s"), params)
        return n

"""``PostgresStore``: one database shared by several bot workers.

Reading or writing one record (``get``, ``insert``, ``put``, ``update``, ``take``, ``delete``) runs on the
event loop itself, on an asynchronous psycopg connection that loop owns (two: one for durable statements,
one opened with ``synchronous_commit = off`` for ``durable=False`` writes), each statement prepared once:
no thread hop, no pool check, one round trip. While the loop's connection is busy with another call, not
open yet, or found dropped, the call goes to the pool. Everything else (scans, streams, rate windows,
purges) runs on psycopg connections in a small pool, driven from a dedicated thread pool so the event loop
never blocks. Every write that must happen once is one atomic statement (``INSERT ... ON CONFLICT``,
``UPDATE ... WHERE version = ...``, ``DELETE ... RETURNING``) or, for rate windows, a short
transaction holding a per-key advisory lock. Tables are named ``milpa_*`` in the given schema.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import select
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from milpa_chat._extras import require
from milpa_chat.errors import StoreError, StoreSchemaError
from milpa_chat.store._sql import (
    SCHEMA_VERSION,
    ThreadedStore,
    check_meta,
    decode,
    encode,
    is_live,
    matches,
    prefilters,
    prefix_upper,
    rate_decision,
    to_record,
)
from milpa_chat.store.base import KEEP, Clock, Due, RateDecision, Record, StreamEntry, check_due, expiry

require("psycopg", extra="postgres", feature="PostgresStore")
require("psycopg_pool", extra="postgres", feature="PostgresStore")

import psycopg  # noqa: E402
from psycopg import errors, sql  # noqa: E402
from psycopg.conninfo import conninfo_to_dict  # noqa: E402
from psycopg.pq import TransactionStatus  # noqa: E402
from psycopg_pool import ConnectionPool, PoolTimeout  # noqa: E402

__all__ = ["PostgresStore"]

_COLS = "key, value::text, version, created_at, updated_at, expires_at, due"
_LIVE = "({t}.expires_at IS NULL OR {t}.expires_at > %(now)s)"
_SCHEMA = [
    'CREATE TABLE {meta} (key text COLLATE "C" PRIMARY KEY, value text NOT NULL)',
    'CREATE TABLE {records} (collection text COLLATE "C" NOT NULL, key text COLLATE "C" NOT NULL, '
    "value json NOT NULL, version bigint NOT NULL, created_at double precision NOT NULL, "
    "updated_at double precision NOT NULL, expires_at double precision, due double precision, "
    "PRIMARY KEY (collection, key))",
    "CREATE INDEX ON {records} (expires_at) WHERE expires_at IS NOT NULL",
    "CREATE INDEX milpa_records_due ON {records} (collection, due) WHERE due IS NOT NULL",
    'CREATE TABLE {heads} (stream text COLLATE "C" PRIMARY KEY, seq bigint NOT NULL)',
    'CREATE TABLE {streams} (stream text COLLATE "C" NOT NULL, seq bigint NOT NULL, value json NOT NULL, '
    "at double precision NOT NULL, PRIMARY KEY (stream, seq))",
    'CREATE TABLE {hits} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, key text COLLATE "C" NOT NULL, '
    "at double precision NOT NULL, cost bigint NOT NULL, expires_at double precision NOT NULL)",
    "CREATE INDEX ON {hits} (key, at)",
    "CREATE INDEX ON {hits} (expires_at)",
]
_UPGRADE_1_TO_2 = [
    "ALTER TABLE {records} ADD COLUMN due double precision",
    "CREATE INDEX milpa_records_due ON {records} (collection, due) WHERE due IS NOT NULL",
    "UPDATE {meta} SET value = '2' WHERE key = 'schema_version'",
]
#: Seconds a call waits for a pooled connection before checking whether the server is there at all.
FIRST_WAIT = 0.5
#: While the server is away, at most one connection attempt per this many seconds (the other calls fail at once).
PROBE_EVERY = 0.1
#: Calls an event loop makes on the pool before it opens connections of its own: a loop that makes only a call or
#: two (an ``asyncio.run()`` per call) keeps to the pool instead of opening connections it would hardly use.
LINK_AFTER = 3
#: Seconds before an event loop tries again to open its own connection after an attempt failed.
RELINK_AFTER = 1.0
_TABLES = {
    "meta": "milpa_meta",
    "records": "milpa_records",
    "heads": "milpa_stream_heads",
    "streams": "milpa_streams",
    "hits": "milpa_hits",
}


def _lock_id(*parts: str) -> int:
    digest = hashlib.blake2b("\x00".join(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def describe_dsn(dsn: str) -> str:
    """``user@host:port/dbname`` of a DSN, never its password."""
    try:
        info = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "<unparsable DSN>"
    return f"{info.get('user', '')}@{info.get('host', 'localhost')}:{info.get('port', 5432)}/{info.get('dbname', '')}"


_IDLE = TransactionStatus.IDLE
#: The server ended the session in answer to a statement (``pg_terminate_backend``, a fast shutdown, an idle
#: session's timeout): it does so only where no commit of that statement has been made (a commit holds the
#: interrupt until its ``ReadyForQuery`` is sent; an immediate shutdown or a crash sends no such error, and a
#: synchronous-replication wait that is ended says "committed locally" and sends none either). So the statement
#: can run again elsewhere. Its commonest case: a backend terminated just before the statement reached it.
_UNSENT = (errors.AdminShutdown, errors.IdleSessionTimeout)


class _Link:
    """One event loop's own connection of one kind (durable, or ``synchronous_commit = off``).

    Used only from that loop's thread (closing the store aside), by one call at a time: ``busy`` while a
    statement is on it. ``poller`` watches its socket: an idle connection has nothing to read unless the server is
    dropping it (a terminated backend, a restart), so anything to read means "do not use"."""

    __slots__ = ("busy", "closing", "conn", "loop", "opening", "poller", "pooled", "retry_at")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.conn: psycopg.AsyncConnection[Any] | None = None
        self.poller: Any = None
        self.busy = False
        #: The store was closed during a call on it: drop it after that call.
        self.closing = False
        self.opening: asyncio.Future[None] | None = None
        self.retry_at = 0.0
        #: Calls of this loop that went to the pool for want of a connection (see ``LINK_AFTER``).
        self.pooled = 0

    def usable(self) -> psycopg.AsyncConnection[Any] | None:
        """The connection, if it is open, idle and the server has said nothing on it; else drop it."""
        conn = self.conn
        if conn is None or self.busy:
            return None
        if conn.closed or conn.pgconn.transaction_status != _IDLE or self.poller.poll(0):
            self.drop()
            return None
        return conn

    def attach(self, conn: psycopg.AsyncConnection[Any]) -> None:
        poller = select.poll()
        poller.register(conn.pgconn.socket, select.POLLIN)
        self.conn, self.poller = conn, poller

    def drop(self) -> None:
        """Close the connection (at once: ``finish`` sends no query and waits for nothing)."""
        conn, self.conn, self.poller = self.conn, None, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.pgconn.finish()


class PostgresStore(ThreadedStore):
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
        self._q = {name: sql.Identifier(schema, table) for name, table in _TABLES.items()}
        self._initialise(dsn)
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
        self._links: dict[tuple[asyncio.AbstractEventLoop, bool], _Link] = {}
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

    # ----------------------------------------------------------- opening
    def _initialise(self, dsn: str) -> None:
        try:
            conn = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot connect to {self._where}: {' '.join(str(exc).split())}. Check that the server is running "
                "and that the DSN (postgresql://user@host:port/dbname) is right."
            ) from exc
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_id("milpa-init", self.schema),))
                version, schema_exists = self._inspect(conn)
                if version == 1:
                    for statement in _UPGRADE_1_TO_2:
                        conn.execute(sql.SQL(statement).format(**self._q))
                if version == 0:
                    if not schema_exists:
                        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(self.schema)))
                    for statement in _SCHEMA:
                        conn.execute(sql.SQL(statement).format(**self._q))
                    conn.execute(
                        sql.SQL("INSERT INTO {} VALUES ('application', 'milpa-chat'), ('schema_version', %s)").format(
                            self._q["meta"]
                        ),
                        (str(SCHEMA_VERSION),),
                    )
        except psycopg.Error as exc:
            raise StoreError(f"cannot prepare {self._where}: {str(exc).strip()}") from exc
        finally:
            conn.close()

    def _inspect(self, conn: psycopg.Connection[Any]) -> tuple[int, bool]:
        """``(schema version, 0 when fresh; schema_exists)``; raises when the schema holds foreign milpa tables."""
        schema_exists = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (self.schema,)).fetchone()
        tables = sorted(
            row[0]
            for row in conn.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND c.relname LIKE 'milpa\\_%%'",
                (self.schema,),
            )
        )
        if "milpa_meta" in tables:
            try:
                with conn.transaction():
                    rows = conn.execute(sql.SQL("SELECT key::text, value::text FROM {}").format(self._q["meta"]))
                    meta = {str(k): str(v) for k, v in rows}
            except psycopg.Error as exc:
                raise StoreSchemaError(
                    f"{self._where} has a milpa_meta table milpa-chat cannot read ({str(exc).strip()}); "
                    "it will not touch it. Use another schema: PostgresStore(dsn, schema=...)."
                ) from exc
            return check_meta(meta, self._where), True
        if tables:
            raise StoreSchemaError(
                f"{self._where} already has tables {', '.join(tables)} but no milpa_meta table; they were not "
                "made by milpa-chat, which will not touch them. Use another schema: PostgresStore(dsn, schema=...)."
            )
        return 0, schema_exists is not None

    # ------------------------------------------------------- connections
    def _conn_kwargs(self, *, lazy: bool) -> dict[str, Any]:
        """Connection options; ``lazy``: commits that return before the WAL is flushed (see _lazy_connection)."""
        return {**self._kwargs, "options": "-c synchronous_commit=off"} if lazy else self._kwargs

    def _new_pool(self, *, lazy: bool = False) -> ConnectionPool[psycopg.Connection[Any]]:
        # check=: a connection the server dropped (a restart, pg_terminate_backend) is replaced before use.
        return ConnectionPool(
            self._dsn,
            min_size=1 if lazy else self._sizes[0],
            max_size=max(1, self._sizes[1] // 2) if lazy else self._sizes[1],
            kwargs=self._conn_kwargs(lazy=lazy),
            open=False,
            name=f"milpa-{self.schema}{'-lazy' if lazy else ''}",
            check=ConnectionPool.check_connection,
            timeout=self._wait,
            reconnect_timeout=max(self._wait, 60.0),
        )

    @contextlib.contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection. While the database is away every call fails at once (one call in
        ``PROBE_EVERY`` seconds tries to connect, in well under a second when the server refuses);
        the first probe that connects replaces the pool, so work resumes at once instead of after
        the pool's growing reconnection back-off."""
        if self._away is not None:
            self._probe()
        pool = self._pool
        try:
            conn = pool.getconn(timeout=min(self._wait, FIRST_WAIT))
        except PoolTimeout:
            self._probe()  # raises at once if the server is away; else the pool is only busy
            pool = self._pool
            conn = pool.getconn(timeout=max(self._wait - FIRST_WAIT, 0.1))
        try:
            yield conn
        finally:
            pool.putconn(conn)

    @contextlib.contextmanager
    def _lazy_connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection for a ``durable=False`` write: its commit returns without waiting for the WAL flush.

        PostgreSQL's WAL is one sequence for every connection, and a commit that waits for the flush flushes
        everything before it: so a durable write still has every earlier write on disk when it returns, durable
        or not. Such a write survives a crash of this process (the server has it); a power cut, an OS crash or
        a crash of the database server within ``wal_writer_delay`` (200 ms by default) may lose it."""
        if self._away is not None:
            self._probe()
        pool = self._lazy_pool
        if pool is None:
            with self._lazy_lock:
                pool = self._lazy_pool
                if pool is None:
                    pool = self._new_pool(lazy=True)
                    pool.open(wait=False)
                    self._lazy_pool = pool
        try:
            conn = pool.getconn(timeout=min(self._wait, FIRST_WAIT))
        except PoolTimeout:
            self._probe()
            pool = self._lazy_pool or pool
            conn = pool.getconn(timeout=max(self._wait - FIRST_WAIT, 0.1))
        try:
            yield conn
        finally:
            pool.putconn(conn)

    def _probe(self) -> None:
        """Connect once, directly: back -> a fresh pool; still away -> :class:`StoreError` now."""
        if time.monotonic() - self._probed_at < PROBE_EVERY or not self._probing.acquire(blocking=False):
            if self._away is None:  # another call just found it there (or is looking)
                return
            self._raise_away()
        try:
            self._probed_at = time.monotonic()
            try:
                psycopg.connect(self._dsn, **{**self._kwargs, "connect_timeout": 2}).close()
            except psycopg.Error as exc:
                since = self._away[0] if self._away is not None else time.monotonic()
                self._away = (since, (str(exc).strip() or type(exc).__name__).splitlines()[0])
                self._raise_away()
            if self._away is not None:  # it is back: the old pool may be waiting out a long back-off
                old, self._pool = self._pool, self._new_pool()
                self._pool.open(wait=False)
                lazy, self._lazy_pool = self._lazy_pool, None  # reopened on the next durable=False write
                self._away = None
                threading.Thread(target=old.close, kwargs={"timeout": 5.0}, daemon=True).start()
                if lazy is not None:
                    threading.Thread(target=lazy.close, kwargs={"timeout": 5.0}, daemon=True).start()
        finally:
            self._probing.release()

    def _raise_away(self) -> None:
        away = self._away
        if away is None:
            raise StoreError(f"{self._where} is busy: no connection became free; try again in a moment")
        raise StoreError(
            f"{self._where} is unreachable (for {time.monotonic() - away[0]:.1f} s: {away[1]}); "
            "calls fail at once until it answers again, then work resumes by itself"
        )

    def _translate(self, exc: Exception) -> StoreError | None:
        if isinstance(exc, psycopg.Error):
            return StoreError(f"{self._where} failed: {str(exc).strip()}")
        return None

    def _one(self, query: bytes, params: Mapping[str, Any], *, durable: bool = True) -> tuple[Any, ...] | None:
        with self._connection() if durable else self._lazy_connection() as conn:
            row: tuple[Any, ...] | None = conn.execute(query, params).fetchone()
            return row

    def _pooled_row(self, query: bytes, params: Callable[[], dict[str, Any]], durable: bool) -> tuple[Any, ...] | None:
        return self._one(query, params(), durable=durable)

    # ------------------------------------------------- the loop's own connections
    async def _row(
        self, query: bytes, params: Callable[[], dict[str, Any]], *, durable: bool = True, read: bool = False
    ) -> tuple[Any, ...] | None:
        """The row (if any) of one statement on one record, on the running loop's own connection; on the pool
        while that one is busy with another call, not open yet, or dropped by the server. ``params()`` gives the
        parameters just before the statement is sent. When the connection fails under the statement: a read
        (``read``) is asked again on the pool; so is a write that the server refused by ending the session
        (``_UNSENT``: nothing of it was committed); any other write raises :class:`StoreError`, as on the pool
        (whether it was committed is unknown)."""
        self._check_open()
        loop = asyncio.get_running_loop()
        link = self._links.get((loop, durable)) or self._new_link(loop, durable)
        conn = link.usable()
        if conn is None:
            if link.conn is None and link.opening is None:
                link.pooled += 1
                if link.pooled >= LINK_AFTER:
                    self._open_link(link, durable)
            return await self._run(self._pooled_row, query, params, durable)
        link.busy = True
        try:
            cursor = conn.cursor()
            await cursor.execute(query, params(), prepare=True)
            row = await cursor.fetchone()
        except psycopg.Error as exc:
            if not conn.closed and not isinstance(exc, _UNSENT):  # the statement failed, the connection is fine
                raise StoreError(f"{self._where} failed: {str(exc).strip()}") from exc
            link.drop()
            if not read and not isinstance(exc, _UNSENT):
                raise StoreError(f"{self._where} failed: {str(exc).strip()}") from exc
        except BaseException:  # cancelled: psycopg has cancelled the statement; keep the connection only if idle
            if conn.pgconn.transaction_status != _IDLE:
                link.drop()
            raise
        else:
            return row
        finally:
            link.busy = False
            if link.closing:
                link.drop()
        return await self._run(self._pooled_row, query, params, durable)

    def _new_link(self, loop: asyncio.AbstractEventLoop, durable: bool) -> _Link:
        with self._links_lock:
            for (other, kind), old in list(self._links.items()):
                if other.is_closed():  # an asyncio.run() that ended: nothing will use its connections again
                    old.drop()
                    del self._links[(other, kind)]
            return self._links.setdefault((loop, durable), _Link(loop))

    def _open_link(self, link: _Link, durable: bool) -> None:
        """Start opening the loop's connection in the background (the calls meanwhile go to the pool)."""
        if self._away is None and time.monotonic() >= link.retry_at:
            link.opening = asyncio.ensure_future(self._connect_link(link, durable))

    async def _connect_link(self, link: _Link, durable: bool) -> None:
        try:
            conn = await psycopg.AsyncConnection.connect(self._dsn, **self._conn_kwargs(lazy=not durable))
        except Exception:  # unreachable, refused, ...: the pool's calls report it; try again later
            link.retry_at = time.monotonic() + RELINK_AFTER
            return
        finally:
            link.opening = None
        if self._closed:
            await conn.close()
        else:
            link.attach(conn)

    def _close_links(self) -> None:
        """Close every loop's connections: at once when idle, else as soon as the call on it has its answer."""
        with self._links_lock:
            links = list(self._links.values())
            self._links.clear()
        for link in links:
            link.closing = True
            if not link.busy:
                link.drop()

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
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_id("milpa-hit", self.schema, key),))
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

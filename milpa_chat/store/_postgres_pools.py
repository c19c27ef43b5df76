"""A PostgreSQL store's pooled connections (:class:`PooledLinks`): the pool of durable connections, the pool of
``synchronous_commit = off`` ones for ``durable=False`` writes, and what happens while the database is away (calls
fail at once, one probe at a time, and a fresh pool the moment it answers again)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from milpa_chat.errors import StoreError
from milpa_chat.store._postgres_loop import LoopLinks

__all__ = ["FIRST_WAIT", "PROBE_EVERY", "PooledLinks"]

#: Seconds a call waits for a pooled connection before checking whether the server is there at all.
FIRST_WAIT = 0.5
#: While the server is away, at most one connection attempt per this many seconds (the other calls fail at once).
PROBE_EVERY = 0.1


class PooledLinks(LoopLinks):
    """The pools of :class:`~milpa_chat.store.postgres.PostgresStore`, which sets the attributes below."""

    schema: str
    _dsn: str
    _wait: float
    _sizes: tuple[int, int]
    _kwargs: dict[str, Any]
    _probing: threading.Lock
    _probed_at: float
    _pool: ConnectionPool[psycopg.Connection[Any]]
    _lazy_pool: ConnectionPool[psycopg.Connection[Any]] | None
    _lazy_lock: threading.Lock

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

"""A PostgreSQL store's one-record calls on the running event loop's own connections: :class:`Link`, one
loop's connection of one kind, and :class:`LoopLinks`, the store's part that opens, uses and closes them (a
call goes to the pool while the loop's connection is busy, not open yet, or dropped by the server)."""

from __future__ import annotations

import asyncio
import contextlib
import select
import threading
import time
from abc import abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

import psycopg
from psycopg import errors
from psycopg.pq import TransactionStatus

from milpa_chat.errors import StoreError
from milpa_chat.store._sql import ThreadedStore

__all__ = ["LINK_AFTER", "RELINK_AFTER", "Link", "LoopLinks"]

#: Calls an event loop makes on the pool before it opens connections of its own: a loop that makes only a call or
#: two (an ``asyncio.run()`` per call) keeps to the pool instead of opening connections it would hardly use.
LINK_AFTER = 3
#: Seconds before an event loop tries again to open its own connection after an attempt failed.
RELINK_AFTER = 1.0

_IDLE = TransactionStatus.IDLE
#: The server ended the session in answer to a statement (``pg_terminate_backend``, a fast shutdown, an idle
#: session's timeout): it does so only where no commit of that statement has been made (a commit holds the
#: interrupt until its ``ReadyForQuery`` is sent; an immediate shutdown or a crash sends no such error, and a
#: synchronous-replication wait that is ended says "committed locally" and sends none either). So the statement
#: can run again elsewhere. Its commonest case: a backend terminated just before the statement reached it.
_UNSENT = (errors.AdminShutdown, errors.IdleSessionTimeout)


class Link:
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


class LoopLinks(ThreadedStore):
    """The store's calls on each event loop's own connections; the store keeps ``_links`` (with
    ``_links_lock``) and gives the pool's side: ``_one``, ``_conn_kwargs``, ``_away``."""

    _where: str
    _dsn: str
    #: While the database is away: since when (monotonic) and the last error.
    _away: tuple[float, str] | None
    #: Each event loop's own connections, by (loop, durable).
    _links: dict[tuple[asyncio.AbstractEventLoop, bool], Link]
    _links_lock: threading.Lock

    @abstractmethod
    def _conn_kwargs(self, *, lazy: bool) -> dict[str, Any]: ...

    @abstractmethod
    def _one(self, query: bytes, params: Mapping[str, Any], *, durable: bool = True) -> tuple[Any, ...] | None:
        """The row (if any) of one statement, on a pooled connection (on the calling thread)."""

    def _pooled_row(self, query: bytes, params: Callable[[], dict[str, Any]], durable: bool) -> tuple[Any, ...] | None:
        return self._one(query, params(), durable=durable)

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

    def _new_link(self, loop: asyncio.AbstractEventLoop, durable: bool) -> Link:
        with self._links_lock:
            for (other, kind), old in list(self._links.items()):
                if other.is_closed():  # an asyncio.run() that ended: nothing will use its connections again
                    old.drop()
                    del self._links[(other, kind)]
            return self._links.setdefault((loop, durable), Link(loop))

    def _open_link(self, link: Link, durable: bool) -> None:
        """Start opening the loop's connection in the background (the calls meanwhile go to the pool)."""
        if self._away is None and time.monotonic() >= link.retry_at:
            link.opening = asyncio.ensure_future(self._connect_link(link, durable))

    async def _connect_link(self, link: Link, durable: bool) -> None:
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

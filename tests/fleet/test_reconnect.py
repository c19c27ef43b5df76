"""PostgreSQL goes away and comes back: the store fails fast while it is away (not after waiting for a pooled
connection) and works again at once on its return (not after psycopg_pool's growing reconnection back-off).
The database is cut by a TCP proxy the test owns between the store and the server (every connection reset, new
ones refused), never by stopping the server.

The bounds are set by what a broken store would do, not by the speed of the machine: the store waits
``POOL_WAIT`` for a connection, so a failure that waited for one takes that long; a store left waiting out
psycopg_pool's reconnection back-off (delays of 1, 2, 4, 8 s) is back seconds after the return. The figures
(half a second for the first failure, then milliseconds; back in a tenth of a second) are printed."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import pytest

from milpa_chat.errors import StoreError
from milpa_chat.store.postgres import PostgresStore
from tests.conftest import POSTGRES_DSN

from ._fleet import admin, free_port, require_postgres

pytestmark = pytest.mark.postgres

#: Seconds a call waits for a pooled connection while the server is there (PostgresStore's ``wait``).
POOL_WAIT = 60.0
#: A failure faster than this did not wait for a pooled connection.
FAST = POOL_WAIT / 4
#: Back sooner than this: at once, not by waiting out the pool's reconnection back-off (its delays double from 1 s).
AT_ONCE = 3.5


class CuttableProxy:
    """Forwards 127.0.0.1:``port`` to the PostgreSQL server; ``cut()`` resets every connection and refuses new
    ones until ``restore()``."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = free_port()
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.StreamWriter] = set()

    async def restore(self) -> None:
        self._server = await asyncio.start_server(self._connected, "127.0.0.1", self.port, reuse_address=True)

    async def cut(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._pipes):
            writer.transport.abort()
        self._pipes.clear()

    async def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._pipes.update((writer, up_writer))
        await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.transport.abort()
        self._pipes.discard(writer)


def through(dsn: str, port: int) -> str:
    parts = urlsplit(dsn)
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit((parts.scheme, f"{user}127.0.0.1:{port}", parts.path, parts.query, parts.fragment))


@contextlib.asynccontextmanager
async def store_behind_proxy() -> AsyncIterator[tuple[PostgresStore, CuttableProxy]]:
    require_postgres()
    target = urlsplit(POSTGRES_DSN)
    proxy = CuttableProxy(target.hostname or "127.0.0.1", target.port or 5432)
    await proxy.restore()
    schema = f"milpa_cut_{secrets.token_hex(5)}"
    store = await asyncio.to_thread(
        PostgresStore, through(POSTGRES_DSN, proxy.port), schema=schema, min_size=2, max_size=4, wait=POOL_WAIT
    )
    try:
        yield store, proxy
    finally:
        await proxy.restore() if proxy._server is None else None
        await store.close()
        await proxy.cut()
        admin(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def timed_failure(store: PostgresStore) -> tuple[float, str]:
    started = time.monotonic()
    with pytest.raises(StoreError) as caught:
        await store.put("notes", "n", {"text": "while away"})
    return time.monotonic() - started, str(caught.value)


@pytest.mark.slow
@pytest.mark.parametrize("away", [0.5, 8.0])
async def test_the_store_fails_fast_while_the_database_is_away_and_is_back_within_a_second(away: float) -> None:
    async with store_behind_proxy() as (store, proxy):
        await store.put("notes", "n", {"text": "before"})
        await proxy.cut()
        failures = [await timed_failure(store) for _ in range(3)]
        await asyncio.sleep(max(0.0, away - sum(t for t, _ in failures)))
        failures.append(await timed_failure(store))
        print(f"\nPostgreSQL away {away} s: failures took {[round(t, 3) for t, _ in failures]} s")
        assert all(t < FAST for t, _ in failures), failures  # every time, not after waiting for a connection
        assert "PostgreSQL" in failures[0][1]
        await proxy.restore()
        back = time.monotonic()
        while True:
            try:
                await store.put("notes", "n", {"text": "after"})
                break
            except StoreError:
                assert time.monotonic() - back < POOL_WAIT, "the store did not come back"
                await asyncio.sleep(0.05)
        recovered = time.monotonic() - back
        print(f"PostgreSQL away {away} s: back after {recovered:.3f} s")
        assert recovered < AT_ONCE, f"back {recovered:.2f} s after the return: the pool's back-off, not at once"
        record = await store.get("notes", "n")
        assert record is not None and record.value == {"text": "after"}


@pytest.mark.slow
async def test_a_run_keeps_its_lease_when_a_renewal_meets_the_database_away() -> None:
    from milpa_chat import ToolContext
    from milpa_chat.runtime.approvals import ApprovalDesk, Change

    async with store_behind_proxy() as (store, proxy):
        runner, sweeper = ApprovalDesk(store, lease=1.5), ApprovalDesk(store, lease=1.5)

        async def follow(change: Change) -> None:  # a worker that can run what it claims
            return None

        runner.follower = sweeper.follower = follow
        alice = ToolContext(principal="telegram:1001", channel="telegram", scopes=("items:write",))
        opened = await runner.open(
            "confirm", alice, tool="slow_archive", args={"item": 1}, summary="archive 1", expires_in=60
        )
        claimed = await runner.decide(opened.id, "confirm", alice, follow=False)
        assert claimed.claimed
        async with runner.holding(claimed.approval):  # a run of 4 s, far longer than its 1.5 s lease
            await asyncio.sleep(0.3)
            await proxy.cut()  # the renewals at 0.5 s and after find the database away for a second and a half
            await asyncio.sleep(1.5)
            await proxy.restore()
            for _ in range(6):
                await asyncio.sleep(0.5)
                try:
                    for due in await sweeper.due():  # another worker's sweep looks for lost leases
                        await sweeper.recover(due)
                except StoreError:
                    continue
        record = await runner.get(opened.id)
        assert record is not None and record.state == "executing" and record.attempt == claimed.approval.attempt, (
            record and record.data.get("outcome")
        )

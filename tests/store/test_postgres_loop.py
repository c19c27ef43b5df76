"""``PostgresStore`` runs one-record calls on the event loop's own connections (no thread hop): they are used
when free, replaced when the server drops them, closed with the store, one pair per loop; everything else, and
any call while they are busy or missing, goes to the pool as before."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable
from types import SimpleNamespace
from typing import Any

import pytest

from milpa_chat.errors import StoreError
from milpa_chat.store.postgres import PostgresStore
from tests.store.conftest import admin_sql

pytestmark = pytest.mark.postgres


@pytest.fixture
async def pg(postgres_dsn: str, pg_schema: str) -> AsyncIterator[PostgresStore]:
    store = PostgresStore(postgres_dsn, schema=pg_schema, min_size=1, max_size=4)
    yield store
    await store.close()


def links(store: PostgresStore) -> dict[bool, Any]:
    """This loop's links by ``durable``."""
    loop = asyncio.get_running_loop()
    return {durable: link for (owner, durable), link in store._links.items() if owner is loop}


async def linked(store: PostgresStore, *, lazy: bool = False) -> None:
    """Have this loop's connections open (a loop's first calls go to the pool; the next ones open them)."""
    kinds = [True, False] if lazy else [True]
    for _ in range(1000):
        opened = links(store)
        if all(opened.get(d) is not None and opened[d].conn is not None for d in kinds):
            return
        await store.get("warm", "up")
        if lazy:
            await store.put("warm", "up", {"n": 0}, durable=False)
        await asyncio.sleep(0.01)
    raise AssertionError("the loop's connections did not open in 10 s")


def pooled_calls(store: PostgresStore) -> list[str]:
    """Record the calls that go through the thread pool from now on."""
    calls: list[str] = []
    run = store._run

    async def counting(fn: Callable[..., Any], *args: Any) -> Any:
        calls.append(getattr(fn, "__name__", repr(fn)))
        return await run(fn, *args)

    store._run = counting  # type: ignore[method-assign,assignment]
    return calls


def backends(dsn: str, schema: str) -> list[int]:
    rows = admin_sql(dsn, "SELECT pid FROM pg_stat_activity WHERE application_name = %s", (f"milpa-{schema}"[:63],))
    return [int(r[0]) for r in rows]


async def gone(dsn: str, pids: list[int]) -> None:
    """Wait until the server has let go of every backend in ``pids``."""
    for _ in range(1000):
        rows = admin_sql(dsn, "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", (pids,))
        if rows[0][0] == 0:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"backends {pids} still there after 10 s")


async def test_one_record_calls_run_on_the_loops_connections_not_the_pool(pg: PostgresStore) -> None:
    await linked(pg, lazy=True)
    pooled = pooled_calls(pg)
    first = await pg.insert("c", "k", {"n": 1}, ttl=60, due=5.0)
    assert first is not None and first.version == 1 and first.value == {"n": 1} and first.due == 5.0
    assert await pg.insert("c", "k", {"n": 9}) is None  # live: not replaced
    got = await pg.get("c", "k")
    assert got is not None and got.value == {"n": 1} and got.expires_at is not None
    put = await pg.put("c", "k", {"n": 2}, durable=False)
    assert put.version == 2 and put.expires_at is None
    lax = await pg.update("c", "k", {"n": 3}, expected_version=2, durable=False)
    assert lax is not None and lax.version == 3
    assert await pg.update("c", "k", {"n": 4}, expected_version=2) is None  # compare-and-set still decides
    strict = await pg.update("c", "k", {"n": 4}, expected_version=3, ttl=30)
    assert strict is not None and strict.version == 4 and strict.value == {"n": 4}
    assert await pg.take("c", "k", expected_version=3) is None
    taken = await pg.take("c", "k", expected_version=4)
    assert taken is not None and taken.value == {"n": 4}
    await pg.put("c", "d", {"n": 5})
    assert await pg.delete("c", "d") is True and await pg.delete("c", "d") is False
    assert pooled == []  # not one thread hop
    assert [r.key for r in await pg.scan("c")] == [] and pooled == ["_scan"]  # the rest: on the pool


async def test_durable_and_lazy_writes_use_connections_of_their_commit_level(pg: PostgresStore) -> None:
    await linked(pg, lazy=True)
    opened = links(pg)
    for durable, expected in [(True, "on"), (False, "off")]:
        cursor = await opened[durable].conn.execute("SHOW synchronous_commit")
        assert await cursor.fetchone() == (expected,)


async def test_a_call_while_the_loops_connection_is_busy_goes_to_the_pool(pg: PostgresStore) -> None:
    await linked(pg)
    await pg.put("c", "n", {"n": 0})
    pooled = pooled_calls(pg)

    async def bump() -> None:
        while True:
            rec = await pg.get("c", "n")
            assert rec is not None
            if await pg.update("c", "n", {"n": rec.value["n"] + 1}, expected_version=rec.version):
                return

    await asyncio.gather(*[bump() for _ in range(20)])
    rec = await pg.get("c", "n")
    assert rec is not None and rec.value == {"n": 20} and rec.version == 21
    assert pooled  # some of them overlapped a call on the loop's connection
    assert links(pg)[True].conn is not None and not links(pg)[True].busy


async def test_connections_the_server_dropped_are_not_used_and_come_back(
    pg: PostgresStore, postgres_dsn: str, pg_schema: str
) -> None:
    await linked(pg, lazy=True)
    await pg.put("c", "k", {"n": 1})
    dropped = [link.conn for link in links(pg).values()]
    pids = backends(postgres_dsn, pg_schema)
    killed = admin_sql(postgres_dsn, "SELECT count(pg_terminate_backend(pid)) FROM unnest(%s::int[]) pid", (pids,))
    assert killed[0][0] >= 2
    await gone(postgres_dsn, pids)
    # every kind of call works at once, on the pool while the loop's connections are replaced
    rec = await pg.get("c", "k")
    assert rec is not None and rec.value == {"n": 1}
    put = await pg.put("c", "k", {"n": 2}, durable=False)
    assert put.version == 2
    upd = await pg.update("c", "k", {"n": 3}, expected_version=2)
    assert upd is not None and upd.version == 3
    assert all(conn is not None and conn.closed for conn in dropped)
    await linked(pg, lazy=True)
    assert all(link.conn not in dropped for link in links(pg).values())
    pooled = pooled_calls(pg)
    upd = await pg.update("c", "k", {"n": 4}, expected_version=3)
    assert upd is not None and upd.version == 4 and pooled == []


async def test_a_read_meeting_a_dropped_connection_is_answered_from_the_pool(
    pg: PostgresStore, postgres_dsn: str, pg_schema: str
) -> None:
    await linked(pg)
    await pg.put("c", "k", {"n": 1})
    link = links(pg)[True]
    link.poller = SimpleNamespace(poll=lambda timeout: [])  # miss the server's goodbye: the statement meets it
    pids = backends(postgres_dsn, pg_schema)
    admin_sql(postgres_dsn, "SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) pid", (pids,))
    await gone(postgres_dsn, pids)
    rec = await pg.get("c", "k")
    assert rec is not None and rec.value == {"n": 1}
    assert link.conn is None  # dropped, to be opened afresh


async def test_a_write_the_server_refused_by_ending_the_session_runs_once_on_the_pool(
    pg: PostgresStore, postgres_dsn: str, pg_schema: str
) -> None:
    await linked(pg)
    await pg.put("c", "k", {"n": 1})
    link = links(pg)[True]
    link.poller = SimpleNamespace(poll=lambda timeout: [])  # the statement itself meets the terminated backend
    pids = backends(postgres_dsn, pg_schema)
    admin_sql(postgres_dsn, "SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) pid", (pids,))
    await gone(postgres_dsn, pids)
    upd = await pg.update("c", "k", {"n": 2}, expected_version=1)
    assert upd is not None and upd.version == 2 and link.conn is None
    rec = await pg.get("c", "k")
    assert rec is not None and rec.version == 2 and rec.value == {"n": 2}  # once


async def test_writes_right_after_their_backend_is_terminated_succeed(
    pg: PostgresStore, postgres_dsn: str, pg_schema: str
) -> None:
    """As on the pool (whose check meets the drop first): the backend may not have said goodbye yet."""
    for n in range(10):
        await linked(pg)
        pid = links(pg)[True].conn.pgconn.backend_pid
        admin_sql(postgres_dsn, "SELECT pg_terminate_backend(%s)", (pid,))
        put = await pg.put("c", "k", {"n": n})
        assert put.version == n + 1


async def test_a_write_whose_connection_is_lost_without_a_word_fails_and_is_not_repeated(pg_schema: str) -> None:
    from urllib.parse import urlsplit

    from tests.conftest import POSTGRES_DSN
    from tests.fleet.test_reconnect import CuttableProxy, through

    target = urlsplit(POSTGRES_DSN)
    proxy = CuttableProxy(target.hostname or "127.0.0.1", target.port or 5432)
    await proxy.restore()
    store = await asyncio.to_thread(PostgresStore, through(POSTGRES_DSN, proxy.port), schema=pg_schema)
    try:
        await linked(store)
        await store.put("c", "k", {"n": 1})
        link = links(store)[True]
        link.poller = SimpleNamespace(poll=lambda timeout: [])  # the statement itself meets the cut
        await proxy.cut()
        with pytest.raises(StoreError, match="PostgreSQL"):
            await store.update("c", "k", {"n": 2}, expected_version=1)
        assert link.conn is None
        await proxy.restore()
        for _ in range(100):  # the pool comes back by itself
            try:
                rec = await store.get("c", "k")
                break
            except StoreError:
                await asyncio.sleep(0.1)
        assert rec is not None and rec.version == 1  # not repeated
    finally:
        if proxy._server is None:
            await proxy.restore()
        await store.close()
        await proxy.cut()


async def test_a_cancelled_call_leaves_the_connection_usable(
    pg: PostgresStore, postgres_dsn: str, pg_schema: str
) -> None:
    import psycopg

    await linked(pg)
    await pg.put("c", "k", {"n": 1})
    with psycopg.connect(postgres_dsn) as holder:  # holds the row: the update waits for it
        holder.execute(f'SELECT * FROM "{pg_schema}".milpa_records WHERE key = %s FOR UPDATE', ("k",))
        waiting = asyncio.ensure_future(pg.update("c", "k", {"n": 2}, expected_version=1))
        for _ in range(1000):
            if links(pg)[True].busy:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        holder.rollback()
    pooled = pooled_calls(pg)
    for _ in range(1000):  # usable again (the same connection, or a new one)
        if links(pg)[True].conn is not None:
            break
        await asyncio.sleep(0.01)
    rec = await pg.get("c", "k")
    assert rec is not None and rec.version == 1 and rec.value == {"n": 1}  # cancelled on the server
    upd = await pg.update("c", "k", {"n": 3}, expected_version=1)
    assert upd is not None and upd.version == 2 and pooled == []


async def test_closing_the_store_closes_the_loops_connections(postgres_dsn: str, pg_schema: str) -> None:
    store = PostgresStore(postgres_dsn, schema=pg_schema)
    await linked(store, lazy=True)
    conns = [link.conn for link in links(store).values()]
    await store.close()
    assert conns and all(conn is not None and conn.closed for conn in conns)
    assert store._links == {}
    with pytest.raises(StoreError, match="closed"):
        await store.get("c", "k")
    for _ in range(1000):
        if not backends(postgres_dsn, pg_schema):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the server still has connections of the closed store")


def test_a_loop_making_a_call_or_two_keeps_to_the_pool(postgres_dsn: str, pg_schema: str) -> None:
    store = PostgresStore(postgres_dsn, schema=pg_schema)

    async def twice() -> None:
        await store.put("c", "k", {"n": 1})
        await store.get("c", "k")
        await asyncio.sleep(0.2)  # time enough to open a connection, had one been started

    try:
        for _ in range(5):
            asyncio.run(twice())
        assert all(link.conn is None and link.opening is None for link in store._links.values())
    finally:
        asyncio.run(store.close())


def test_each_loop_and_thread_has_its_own_connections(postgres_dsn: str, pg_schema: str) -> None:
    store = PostgresStore(postgres_dsn, schema=pg_schema)
    asyncio.run(store.put("c", "n", {"n": 0}))
    errors: list[BaseException] = []
    seen: list[Any] = []

    async def bump(times: int) -> None:
        await linked(store)
        seen.append(links(store)[True])
        for _ in range(times):
            while True:
                rec = await store.get("c", "n")
                assert rec is not None
                if await store.update("c", "n", {"n": rec.value["n"] + 1}, expected_version=rec.version):
                    break

    def thread() -> None:
        try:
            asyncio.run(bump(25))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=thread) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert len({id(link) for link in seen}) == 3  # one link per loop

    async def finish() -> None:
        rec = await store.get("c", "n")
        assert rec is not None and rec.value == {"n": 75} and rec.version == 76
        # the loops that ended left connections nobody can use: a new loop's first call closes them
        assert all(link.conn is None for link in seen)
        await store.close()

    started = time.monotonic()
    asyncio.run(finish())
    assert time.monotonic() - started < 30

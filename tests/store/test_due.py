"""The due index: records carry a due time written with the same operation, read back earliest first."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from milpa_chat.errors import StoreError
from milpa_chat.store import KEEP, Store
from milpa_chat.store.base import Due
from milpa_chat.testing import ManualClock
from tests.store.conftest import BACKENDS, admin_sql

every_backend = pytest.mark.parametrize("opener", BACKENDS, indirect=True)


@every_backend
async def test_due_returns_what_has_come_earliest_first(store: Store, clock: ManualClock) -> None:
    now = clock.now
    await store.insert("jobs", "late", {"n": 1}, due=now + 50)
    await store.insert("jobs", "soon", {"n": 2}, due=now + 5)
    await store.insert("jobs", "never", {"n": 3})
    await store.put("jobs", "now", {"n": 4}, due=now)
    await store.insert("other", "x", {"n": 5}, due=now)
    assert [r.key for r in await store.due("jobs", before=now)] == ["now"]
    assert [r.key for r in await store.due("jobs", before=now + 10)] == ["now", "soon"]
    assert [r.key for r in await store.due("jobs", before=now + 100, limit=2)] == ["now", "soon"]
    got = await store.due("jobs", before=now + 100)
    assert [(r.key, r.due) for r in got] == [("now", now), ("soon", now + 5), ("late", now + 50)]


@every_backend
async def test_update_moves_keeps_or_clears_the_due_time(store: Store, clock: ManualClock) -> None:
    now = clock.now
    rec = await store.insert("jobs", "a", {"n": 1}, due=now + 5)
    assert rec is not None and rec.due == now + 5
    kept = await store.update("jobs", "a", {"n": 2}, expected_version=1)
    assert kept is not None and kept.due == now + 5
    kept = await store.update("jobs", "a", {"n": 3}, expected_version=2, due=KEEP)
    assert kept is not None and kept.due == now + 5
    moved = await store.update("jobs", "a", {"n": 4}, expected_version=3, due=now + 1)
    assert moved is not None and moved.due == now + 1
    assert [r.value["n"] for r in await store.due("jobs", before=now + 2)] == [4]
    cleared = await store.update("jobs", "a", {"n": 5}, expected_version=4, due=None)
    assert cleared is not None and cleared.due is None
    assert await store.due("jobs", before=now + 1000) == []
    got = await store.get("jobs", "a")
    assert got is not None and got.due is None


@every_backend
@pytest.mark.parametrize("ttl", [None, 60.0], ids=["expiry-kept", "expiry-set"])
@pytest.mark.parametrize("due", [KEEP, None, 7], ids=["due-kept", "due-cleared", "due-moved"])
async def test_update_returns_the_record_as_stored(
    store: Store, clock: ManualClock, ttl: float | None, due: Due
) -> None:
    rec = await store.insert("jobs", "a", {"n": 1}, ttl=30, due=clock.now + 5)
    assert rec is not None
    clock.advance(2)
    new_due = due if due is KEEP or due is None else clock.now + due  # (an int: stored as a time all the same)
    updated = await store.update("jobs", "a", {"n": 2}, expected_version=1, ttl=ttl, due=new_due)
    assert updated is not None
    assert updated == await store.get("jobs", "a")
    assert (updated.version, updated.created_at, updated.updated_at) == (2, clock.now - 2, clock.now)
    assert updated.expires_at == (rec.expires_at if ttl is None else clock.now + ttl)
    assert updated.due == (rec.due if due is KEEP else new_due)


@every_backend
async def test_deleted_taken_and_expired_records_are_not_due(store: Store, clock: ManualClock) -> None:
    now = clock.now
    await store.insert("jobs", "deleted", {"n": 1}, due=now)
    await store.insert("jobs", "taken", {"n": 2}, due=now)
    await store.insert("jobs", "expiring", {"n": 3}, due=now, ttl=10)
    await store.insert("jobs", "stays", {"n": 4}, due=now)
    assert await store.delete("jobs", "deleted")
    assert await store.take("jobs", "taken") is not None
    clock.advance(11)
    assert [r.key for r in await store.due("jobs", before=clock.now)] == ["stays"]
    await store.purge_expired()
    assert [r.key for r in await store.due("jobs", before=clock.now)] == ["stays"]


@every_backend
async def test_a_bad_due_time_is_refused_before_writing(store: Store) -> None:
    with pytest.raises(StoreError, match="due must be a UNIX time"):
        await store.insert("jobs", "a", {"n": 1}, due="soon")  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="due must be a UNIX time"):
        await store.put("jobs", "a", {"n": 1}, due=float("nan"))
    assert await store.get("jobs", "a") is None


@pytest.mark.parametrize("opener", ["sqlite"], indirect=True)
async def test_the_sqlite_due_query_uses_the_index(store: Store) -> None:
    path = Path(store.path)  # type: ignore[attr-defined]
    conn = sqlite3.connect(path)
    plan = conn.execute(
        "EXPLAIN QUERY PLAN SELECT key FROM milpa_records WHERE collection = 'a' AND due IS NOT NULL "
        "AND due <= 5 ORDER BY due, key LIMIT 10"
    ).fetchall()
    conn.close()
    assert "milpa_records_due" in " ".join(str(row[-1]) for row in plan)


def test_a_schema_1_sqlite_store_is_upgraded_and_keeps_its_records(tmp_path: Path) -> None:
    import asyncio

    from milpa_chat.store import SqliteStore

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE milpa_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO milpa_meta VALUES ('application', 'milpa-chat'), ('schema_version', '1');"
        "CREATE TABLE milpa_records (collection TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, "
        "version INTEGER NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL, expires_at REAL, "
        "PRIMARY KEY (collection, key));"
        "INSERT INTO milpa_records VALUES ('c', 'k', '{\"v\":1}', 3, 1.0, 2.0, NULL);"
        "CREATE TABLE milpa_stream_heads (stream TEXT PRIMARY KEY, seq INTEGER NOT NULL);"
        "CREATE TABLE milpa_streams (stream TEXT NOT NULL, seq INTEGER NOT NULL, value TEXT NOT NULL, "
        "at REAL NOT NULL, PRIMARY KEY (stream, seq));"
        "CREATE TABLE milpa_hits (id INTEGER PRIMARY KEY, key TEXT NOT NULL, at REAL NOT NULL, "
        "cost INTEGER NOT NULL, expires_at REAL NOT NULL);"
    )
    conn.close()

    async def use() -> tuple[int, list[str]]:
        store = SqliteStore(path)
        rec = await store.get("c", "k")
        assert rec is not None and rec.value == {"v": 1} and rec.due is None
        await store.update("c", "k", {"v": 2}, expected_version=3, due=1.0)
        due = [r.key for r in await store.due("c", before=1.0)]
        await store.close()
        return rec.version, due

    assert asyncio.run(use()) == (3, ["k"])
    conn = sqlite3.connect(path)
    assert dict(conn.execute("SELECT key, value FROM milpa_meta").fetchall())["schema_version"] == "2"
    conn.close()


def test_a_schema_1_postgres_store_is_upgraded(postgres_dsn: str, pg_schema: str) -> None:
    import asyncio

    from milpa_chat.store.postgres import PostgresStore

    s = f'"{pg_schema}"'
    for statement in [
        f"CREATE TABLE {s}.milpa_meta (key text PRIMARY KEY, value text NOT NULL)",
        f"INSERT INTO {s}.milpa_meta VALUES ('application', 'milpa-chat'), ('schema_version', '1')",
        f"CREATE TABLE {s}.milpa_records (collection text NOT NULL, key text NOT NULL, value json NOT NULL, "
        "version bigint NOT NULL, created_at double precision NOT NULL, updated_at double precision NOT NULL, "
        "expires_at double precision, PRIMARY KEY (collection, key))",
        f"INSERT INTO {s}.milpa_records VALUES ('c', 'k', '{{\"v\": 1}}', 1, 1.0, 1.0, NULL)",
    ]:
        admin_sql(postgres_dsn, statement)

    async def use() -> list[str]:
        store = PostgresStore(postgres_dsn, schema=pg_schema)
        await store.update("c", "k", {"v": 2}, expected_version=1, due=5.0)
        due = [r.key for r in await store.due("c", before=5.0)]
        await store.close()
        return due

    assert asyncio.run(use()) == ["k"]
    meta = admin_sql(postgres_dsn, f"SELECT value FROM {s}.milpa_meta WHERE key = 'schema_version'")
    assert meta == [("2",)]


def test_postgres_replaces_connections_the_server_dropped(postgres_dsn: str, pg_schema: str) -> None:
    import asyncio

    from milpa_chat.store.postgres import PostgresStore

    async def run() -> tuple[int, float]:
        store = PostgresStore(postgres_dsn, schema=pg_schema, min_size=2, max_size=2)
        await store.put("c", "k", {"v": 1})
        killed = admin_sql(
            postgres_dsn,
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %s",
            (f"milpa-{pg_schema}"[:63],),
        )
        import time

        start = time.perf_counter()
        rec = await store.get("c", "k")  # the first call after the drop succeeds
        took = time.perf_counter() - start
        assert rec is not None and rec.value == {"v": 1}
        await store.close()
        return int(killed[0][0]), took

    killed, took = asyncio.run(run())
    assert killed >= 1
    print(f"first call after {killed} dropped connections: {took * 1000:.0f} ms")

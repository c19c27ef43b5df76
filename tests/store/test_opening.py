"""Opening a store: new databases are marked as milpa-chat's; corrupt or foreign ones are refused
with a message naming them, and left exactly as they were."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from milpa_chat.errors import StoreCorruptError, StoreError, StoreSchemaError
from milpa_chat.store import MemoryStore, open_store
from milpa_chat.store.sqlite import SqliteStore
from tests.store.conftest import admin_sql


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_sqlite(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()


async def test_new_file_is_marked_as_a_milpa_store_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    store = SqliteStore(path)
    await store.close()
    conn = sqlite3.connect(path)
    meta = dict(conn.execute("SELECT key, value FROM milpa_meta").fetchall())
    journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
    conn.close()
    assert meta == {"application": "milpa-chat", "schema_version": "2"}
    assert journal == "wal"


async def test_empty_file_becomes_a_store(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    store = SqliteStore(path)
    try:
        assert await store.insert("c", "k", {}) is not None
    finally:
        await store.close()


@pytest.mark.parametrize(
    "content",
    [b"these are my notes, not a database\n" * 50, b"SQLite format 3\x00" + b"\xff" * 4000],
    ids=["text", "damaged"],
)
def test_corrupt_file_is_refused_untouched(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(content)
    before = digest(path)
    with pytest.raises(StoreCorruptError) as err:
        SqliteStore(path)
    assert str(path) in str(err.value)
    assert "not a readable SQLite database" in str(err.value)
    assert digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]


def test_foreign_sqlite_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    make_sqlite(path, "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)", "INSERT INTO users VALUES (1, 'ana')")
    before = digest(path)
    with pytest.raises(StoreSchemaError) as err:
        SqliteStore(path)
    assert str(path) in str(err.value) and "users" in str(err.value)
    assert "another application" in str(err.value)
    assert digest(path) == before


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ("('application', 'ledger'), ('schema_version', '1')", "'ledger'"),
        ("('application', 'milpa-chat'), ('schema_version', '99')", "newer milpa-chat"),
        ("('application', 'milpa-chat'), ('schema_version', 'one')", "unreadable schema_version"),
    ],
    ids=["other-app", "newer", "garbled"],
)
def test_sqlite_meta_of_another_kind_is_refused_untouched(tmp_path: Path, rows: str, message: str) -> None:
    path = tmp_path / "meta.db"
    make_sqlite(
        path, "CREATE TABLE milpa_meta (key TEXT PRIMARY KEY, value TEXT)", f"INSERT INTO milpa_meta VALUES {rows}"
    )
    before = digest(path)
    with pytest.raises(StoreSchemaError, match=message) as err:
        SqliteStore(path)
    assert str(path) in str(err.value)
    assert digest(path) == before


def test_missing_directory_is_named(tmp_path: Path) -> None:
    path = tmp_path / "no" / "such" / "dir" / "store.db"
    with pytest.raises(StoreError, match="directory") as err:
        SqliteStore(path)
    assert str(path) in str(err.value)


def test_directory_instead_of_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is a directory"):
        SqliteStore(tmp_path)


# ----------------------------------------------------------- PostgreSQL
def pg_tables(dsn: str, schema: str) -> list[tuple[str, ...]]:
    return admin_sql(
        dsn, "SELECT table_name FROM information_schema.tables WHERE table_schema = %s ORDER BY 1", (schema,)
    )


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (
            [
                "CREATE TABLE {s}.milpa_meta (key text PRIMARY KEY, value text)",
                "INSERT INTO {s}.milpa_meta VALUES ('application', 'ledger'), ('schema_version', '1')",
            ],
            "'ledger'",
        ),
        (
            [
                "CREATE TABLE {s}.milpa_meta (key text PRIMARY KEY, value text)",
                "INSERT INTO {s}.milpa_meta VALUES ('application', 'milpa-chat'), ('schema_version', '3')",
            ],
            "newer milpa-chat",
        ),
        (["CREATE TABLE {s}.milpa_meta (id int, payload text)"], "cannot read"),
        (["CREATE TABLE {s}.milpa_records (id int)"], "no milpa_meta"),
    ],
    ids=["other-app", "newer", "other-columns", "tables-without-meta"],
)
def test_foreign_postgres_schema_is_refused_untouched(
    postgres_dsn: str, pg_schema: str, setup: list[str], message: str
) -> None:
    from milpa_chat.store.postgres import PostgresStore

    for statement in setup:
        admin_sql(postgres_dsn, statement.format(s=f'"{pg_schema}"'))
    tables = pg_tables(postgres_dsn, pg_schema)
    content = [admin_sql(postgres_dsn, f'SELECT * FROM "{pg_schema}"."{t}" ORDER BY 1') for (t,) in tables]
    with pytest.raises(StoreSchemaError, match=message) as err:
        PostgresStore(postgres_dsn, schema=pg_schema)
    assert pg_schema in str(err.value) and "127.0.0.1:5432/test" in str(err.value)
    assert pg_tables(postgres_dsn, pg_schema) == tables
    assert [admin_sql(postgres_dsn, f'SELECT * FROM "{pg_schema}"."{t}" ORDER BY 1') for (t,) in tables] == content


async def test_postgres_creates_a_missing_schema(postgres_dsn: str, pg_schema: str) -> None:
    from milpa_chat.store.postgres import PostgresStore

    schema = pg_schema + "_new"
    try:
        store = PostgresStore(postgres_dsn, schema=schema)
        await store.put("c", "k", {"v": 1})
        await store.close()
        meta = admin_sql(postgres_dsn, f'SELECT key, value FROM "{schema}".milpa_meta ORDER BY 1')
        assert meta == [("application", "milpa-chat"), ("schema_version", "2")]
    finally:
        admin_sql(postgres_dsn, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_unreachable_postgres_is_named_without_the_password() -> None:
    from milpa_chat.store.postgres import PostgresStore

    with pytest.raises(StoreError, match="cannot connect") as err:
        PostgresStore("postgresql://milpa:s3cret@127.0.0.1:1/nowhere")
    assert "milpa@127.0.0.1:1/nowhere" in str(err.value)
    assert "s3cret" not in str(err.value)


# ------------------------------------------------------------ open_store
async def test_open_store_urls(tmp_path: Path) -> None:
    assert isinstance(open_store("memory://"), MemoryStore)
    for url, name in ((f"sqlite:///{tmp_path}/a.db", "a.db"), (str(tmp_path / "b.db"), "b.db")):
        store = open_store(url)
        assert isinstance(store, SqliteStore) and store.path == tmp_path / name
        await store.close()
    with pytest.raises(StoreError, match=r"127\.0\.0\.1:1/test"):
        open_store("postgresql://postgres@127.0.0.1:1/test")
    with pytest.raises(ValueError, match="sqlite:///"):
        open_store("sqlite://relative.db")
    with pytest.raises(ValueError, match="unknown scheme"):
        open_store("redis://localhost")


async def test_a_first_call_while_another_connection_holds_the_file_waits_instead_of_failing(tmp_path: Path) -> None:
    """The event loop's own connection never waits for a lock once open, but opening it reads the schema, which
    must wait like any connection (another one may be recovering or checkpointing the WAL that moment)."""
    import threading

    path = tmp_path / "store.db"
    store = SqliteStore(path)
    try:
        holder = sqlite3.connect(path, check_same_thread=False)
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")  # (nobody else can even read until it is closed)
        threading.Timer(0.3, holder.close).start()
        assert await store.get("notes", "a") is None
        await store.put("notes", "a", {"n": 1})
        record = await store.get("notes", "a")
        assert record is not None and record.value == {"n": 1}
    finally:
        await store.close()

"""Opening a SQLite store's file: its header checked before anything touches it, the tables created in an
empty file (or a schema upgraded) under the write lock, SQLite's errors told in the store's words."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from milpa_chat.errors import StoreCorruptError, StoreError, StoreSchemaError
from milpa_chat.store._sql import SCHEMA_VERSION, check_meta

__all__ = ["check_header", "initialise", "translate"]

_MAGIC = b"SQLite format 3\x00"
_SCHEMA = """
CREATE TABLE milpa_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE milpa_records (
    collection TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, version INTEGER NOT NULL,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, expires_at REAL, due REAL,
    PRIMARY KEY (collection, key));
CREATE INDEX milpa_records_expiry ON milpa_records (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX milpa_records_due ON milpa_records (collection, due) WHERE due IS NOT NULL;
CREATE TABLE milpa_stream_heads (stream TEXT PRIMARY KEY, seq INTEGER NOT NULL);
CREATE TABLE milpa_streams (
    stream TEXT NOT NULL, seq INTEGER NOT NULL, value TEXT NOT NULL, at REAL NOT NULL,
    PRIMARY KEY (stream, seq));
CREATE TABLE milpa_hits (
    id INTEGER PRIMARY KEY, key TEXT NOT NULL, at REAL NOT NULL, cost INTEGER NOT NULL,
    expires_at REAL NOT NULL);
CREATE INDEX milpa_hits_key ON milpa_hits (key, at);
CREATE INDEX milpa_hits_expiry ON milpa_hits (expires_at);
"""
_UPGRADE_1_TO_2 = [
    "ALTER TABLE milpa_records ADD COLUMN due REAL",
    "CREATE INDEX milpa_records_due ON milpa_records (collection, due) WHERE due IS NOT NULL",
]
_CORRUPT_CODES = {"SQLITE_NOTADB", "SQLITE_CORRUPT"}


def check_header(path: Path) -> None:
    """Refuse a directory or a file that is not a SQLite database, reading only its first bytes."""
    if path.is_dir():
        raise StoreError(
            f"SQLite store path {str(path)!r} is a directory; give a file path such as {str(path / 'milpa.db')!r}"
        )
    try:
        with path.open("rb") as fh:
            head = fh.read(len(_MAGIC))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"cannot read SQLite store {str(path)!r}: {exc}") from exc
    if head and head != _MAGIC:
        raise corrupt(path, "the file does not start with the SQLite header")


def initialise(conn: sqlite3.Connection, path: Path) -> None:
    """Create the tables in an empty file, or upgrade an older schema, holding the write lock; a file of
    this schema is left as it is, a foreign one untouched (:func:`inspect` raises)."""
    if inspect(conn, path) == SCHEMA_VERSION:
        return
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN IMMEDIATE")
    found = inspect(conn, path)  # again, now that we hold the write lock
    if found == 0:
        for statement in filter(str.strip, _SCHEMA.split(";")):
            conn.execute(statement)
        conn.execute(
            "INSERT INTO milpa_meta VALUES ('application', 'milpa-chat'), ('schema_version', ?)",
            (str(SCHEMA_VERSION),),
        )
    elif found == 1:
        for statement in _UPGRADE_1_TO_2:
            conn.execute(statement)
        conn.execute("UPDATE milpa_meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
    conn.execute("COMMIT")


def inspect(conn: sqlite3.Connection, path: Path) -> int:
    """The store's schema version, 0 when the file is empty of tables (ready to initialise); raise when foreign."""
    tables = sorted(
        row[0]
        for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if not row[0].startswith("sqlite_")
    )
    if "milpa_meta" in tables:
        try:
            meta = dict(conn.execute("SELECT key, value FROM milpa_meta").fetchall())
        except sqlite3.OperationalError as exc:
            raise StoreSchemaError(
                f"{str(path)!r} has a milpa_meta table milpa-chat cannot read ({exc}); "
                "it will not touch the file. Point the store at a separate file."
            ) from exc
        return check_meta({str(k): str(v) for k, v in meta.items()}, repr(str(path)))
    if tables:
        shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
        raise StoreSchemaError(
            f"{str(path)!r} is a SQLite database of another application (tables: {shown}) without "
            "a milpa_meta table; milpa-chat will not touch it. Use a separate file for the store."
        )
    return 0


def corrupt(path: Path, detail: str) -> StoreCorruptError:
    return StoreCorruptError(
        f"{str(path)!r} is not a readable SQLite database ({detail}); milpa-chat left it untouched. "
        "Move it aside (restore it from a backup if it held your data) or point the store at another file."
    )


def translate(exc: Exception, path: Path, busy_timeout: float) -> StoreError | None:
    """SQLite's error as the store's (``None`` for anything else): a corrupt file, a lock held too long, or
    the failure itself."""
    if not isinstance(exc, sqlite3.Error):
        return None
    if getattr(exc, "sqlite_errorname", "") in _CORRUPT_CODES:
        return corrupt(path, str(exc))
    if getattr(exc, "sqlite_errorname", "").startswith("SQLITE_BUSY"):
        return StoreError(
            f"{str(path)!r} stayed locked by another writer for more than {busy_timeout}s; "
            "raise busy_timeout or find the process holding a long transaction."
        )
    return StoreError(f"SQLite store {str(path)!r} failed: {exc}")

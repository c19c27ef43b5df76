"""Opening a PostgreSQL store's schema: the ``milpa_*`` tables created in a fresh schema (or an older one
upgraded) under an advisory lock, a schema holding tables of another application or of a newer milpa-chat
refused, and the advisory lock ids the store takes."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import psycopg
from psycopg import sql

from milpa_chat.errors import StoreError, StoreSchemaError
from milpa_chat.store._sql import SCHEMA_VERSION, check_meta

__all__ = ["TABLES", "initialise", "inspect", "lock_id"]

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
#: The store's tables by the name its statements give them (``{records}`` ...).
TABLES = {
    "meta": "milpa_meta",
    "records": "milpa_records",
    "heads": "milpa_stream_heads",
    "streams": "milpa_streams",
    "hits": "milpa_hits",
}


def lock_id(*parts: str) -> int:
    """The ``pg_advisory_xact_lock`` id of ``parts``."""
    digest = hashlib.blake2b("\x00".join(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def initialise(dsn: str, schema: str, tables: Mapping[str, sql.Identifier], where: str) -> None:
    """Create ``schema`` and its tables when absent, or upgrade an older schema, holding an advisory lock;
    ``tables``: :data:`TABLES`' names qualified by the schema; ``where``: the store, for error messages."""
    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise StoreError(
            f"cannot connect to {where}: {' '.join(str(exc).split())}. Check that the server is running "
            "and that the DSN (postgresql://user@host:port/dbname) is right."
        ) from exc
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_id("milpa-init", schema),))
            version, schema_exists = inspect(conn, schema, tables, where)
            if version == 1:
                for statement in _UPGRADE_1_TO_2:
                    conn.execute(sql.SQL(statement).format(**tables))
            if version == 0:
                if not schema_exists:
                    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
                for statement in _SCHEMA:
                    conn.execute(sql.SQL(statement).format(**tables))
                conn.execute(
                    sql.SQL("INSERT INTO {} VALUES ('application', 'milpa-chat'), ('schema_version', %s)").format(
                        tables["meta"]
                    ),
                    (str(SCHEMA_VERSION),),
                )
    except psycopg.Error as exc:
        raise StoreError(f"cannot prepare {where}: {str(exc).strip()}") from exc
    finally:
        conn.close()


def inspect(
    conn: psycopg.Connection[Any], schema: str, tables: Mapping[str, sql.Identifier], where: str
) -> tuple[int, bool]:
    """``(schema version, 0 when fresh; schema_exists)``; raises when the schema holds foreign milpa tables."""
    schema_exists = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
    found = sorted(
        row[0]
        for row in conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND c.relname LIKE 'milpa\\_%%'",
            (schema,),
        )
    )
    if "milpa_meta" in found:
        try:
            with conn.transaction():
                rows = conn.execute(sql.SQL("SELECT key::text, value::text FROM {}").format(tables["meta"]))
                meta = {str(k): str(v) for k, v in rows}
        except psycopg.Error as exc:
            raise StoreSchemaError(
                f"{where} has a milpa_meta table milpa-chat cannot read ({str(exc).strip()}); "
                "it will not touch it. Use another schema: PostgresStore(dsn, schema=...)."
            ) from exc
        return check_meta(meta, where), True
    if found:
        raise StoreSchemaError(
            f"{where} already has tables {', '.join(found)} but no milpa_meta table; they were not "
            "made by milpa-chat, which will not touch them. Use another schema: PostgresStore(dsn, schema=...)."
        )
    return 0, schema_exists is not None

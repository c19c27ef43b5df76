"""Where a test's bot processes keep their store: a SQLite file, or a PostgreSQL database of its own."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.store.conftest import admin_sql, postgres_dsn

__all__ = ["postgres_dsn", "store_url"]


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """``MILPA_STORE`` for the test: a SQLite file, or a fresh PostgreSQL database (dropped afterwards)."""
    if request.param == "sqlite":
        yield str(tmp_path / "bot.db")
        return
    dsn = request.getfixturevalue("postgres_dsn")
    name = f"milpa_t_{secrets.token_hex(5)}"
    admin_sql(dsn, f'CREATE DATABASE "{name}"')
    try:
        yield f"{dsn.rsplit('/', 1)[0]}/{name}"
    finally:
        admin_sql(dsn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

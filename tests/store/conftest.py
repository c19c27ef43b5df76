"""Fixtures of the store suite: a controllable clock and one store per backend.

PostgreSQL tests each get a fresh schema ``milpa_t_<random>`` that is dropped afterwards. When the
server is unreachable they are skipped with the reason, or fail when MILPA_REQUIRE_POSTGRES=1.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from milpa_chat.store import MemoryStore, Store
from milpa_chat.testing import ManualClock
from tests.conftest import POSTGRES_DSN, REQUIRE_POSTGRES

BACKENDS = ["memory", "sqlite", "postgres"]
DURABLE = ["sqlite", "postgres"]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_700_000_000.0)


@pytest.fixture(scope="session")
def postgres_dsn() -> str:
    """The test server's DSN, after checking that it answers."""
    try:
        import psycopg

        with psycopg.connect(POSTGRES_DSN, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        reason = f"PostgreSQL at {POSTGRES_DSN} is unreachable ({type(exc).__name__}: {exc})"
        if REQUIRE_POSTGRES:
            pytest.fail(f"{reason}; MILPA_REQUIRE_POSTGRES=1 requires it")
        pytest.skip(reason)
    return POSTGRES_DSN


def admin_sql(dsn: str, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run one statement on its own autocommit connection; rows if it returns any."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else []


@pytest.fixture
def pg_schema(postgres_dsn: str) -> Iterator[str]:
    """A freshly created, empty schema, dropped with everything in it afterwards."""
    name = f"milpa_t_{secrets.token_hex(6)}"
    admin_sql(postgres_dsn, f'CREATE SCHEMA "{name}"')
    yield name
    admin_sql(postgres_dsn, f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def _where(request: pytest.FixtureRequest, tmp_path: Path, backend: str) -> dict[str, Any]:
    if backend == "sqlite":
        return {"backend": "sqlite", "path": str(tmp_path / "store.db")}
    if backend == "postgres":
        return {
            "backend": "postgres",
            "dsn": request.getfixturevalue("postgres_dsn"),
            "schema": request.getfixturevalue("pg_schema"),
        }
    raise ValueError(f"no durable backend named {backend!r}")


@pytest.fixture
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """Where a durable backend (the indirect parameter) keeps its data, as a picklable dict
    for ``_workers.open_spec`` in this or another process."""
    return _where(request, tmp_path, request.param)


@pytest.fixture
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[..., Store]:
    """``opener(**kwargs)`` opens a store of the backend named by the indirect parameter;
    durable backends give a new instance on the same data each time."""
    if request.param == "memory":
        shared: dict[str, MemoryStore] = {}
        return lambda **kwargs: shared.setdefault("store", MemoryStore(**kwargs))
    from tests.store._workers import open_spec

    where = _where(request, tmp_path, request.param)
    return lambda **kwargs: open_spec(where, **kwargs)


@pytest.fixture
async def store(opener: Callable[..., Store], clock: ManualClock) -> AsyncIterator[Store]:
    """A store of the test's backend, on the controllable clock."""
    instance = opener(clock=clock)
    yield instance
    await instance.close()

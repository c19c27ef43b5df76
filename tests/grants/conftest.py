"""Fixtures of the standing-grant host tests: a store per backend, reopened as new objects on the same data."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from milpa_chat.store import MemoryStore, Store
from milpa_chat.testing import ManualClock
from tests.grants import house
from tests.store.conftest import pg_schema, postgres_dsn

__all__ = ["pg_schema", "postgres_dsn"]


@pytest.fixture(autouse=True)
def _fresh_house() -> None:
    house.PUBLISHED.clear()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_700_000_000.0)


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def opener(request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock) -> Callable[[], Store]:
    """``opener()`` opens the backend's store on the test clock; durable ones give new objects on the same data."""
    if request.param == "memory":
        shared: dict[str, MemoryStore] = {}
        return lambda: shared.setdefault("store", MemoryStore(clock=clock))
    from tests.store._workers import open_spec

    where: dict[str, Any] = {"backend": "sqlite", "path": str(tmp_path / "grants.db")}
    if request.param == "postgres":
        where = {
            "backend": "postgres",
            "dsn": request.getfixturevalue("postgres_dsn"),
            "schema": request.getfixturevalue("pg_schema"),
        }
    return lambda: open_spec(where, clock=clock)


@pytest.fixture
async def store(opener: Callable[[], Store]) -> AsyncIterator[Store]:
    instance = opener()
    yield instance
    await instance.close()

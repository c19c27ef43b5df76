"""Shared fixtures. PostgreSQL: MILPA_TEST_POSTGRES_DSN (default postgresql://postgres@127.0.0.1:5432/test).

Set MILPA_REQUIRE_POSTGRES=1 (``.ci/run`` does) to make an unreachable server a failure instead of a skip.
"""

from __future__ import annotations

import os

import pytest

POSTGRES_DSN = os.environ.get("MILPA_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")
REQUIRE_POSTGRES = os.environ.get("MILPA_REQUIRE_POSTGRES") == "1"


@pytest.fixture(autouse=True)
def _own_data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """``milpa-chat`` keeps its store in the user's data directory: tests get their own, never the real home."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))


_POSTGRES_FIXTURES = frozenset({"postgres_dsn", "pg_schema"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """``postgres`` marks every test that talks to the PostgreSQL server: it uses one of its fixtures, runs a
    backend parametrised as postgres (``-m postgres`` / ``-m "not postgres"``); tests that reach it another way
    (the fleet's workers) carry the marker themselves."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        ids = callspec.id if callspec is not None else ""
        names = set(getattr(item, "fixturenames", ()))
        if names & _POSTGRES_FIXTURES or "postgres" in ids:
            item.add_marker(pytest.mark.postgres)

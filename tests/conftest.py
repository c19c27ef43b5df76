"""Shared fixtures. PostgreSQL: MILPA_TEST_POSTGRES_DSN (default postgresql://postgres@127.0.0.1:5432/test).

Set MILPA_REQUIRE_POSTGRES=1 (``.ci/run`` does) to make an unreachable server a failure instead of a skip.
"""

from __future__ import annotations

import os

POSTGRES_DSN = os.environ.get("MILPA_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")
REQUIRE_POSTGRES = os.environ.get("MILPA_REQUIRE_POSTGRES") == "1"

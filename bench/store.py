"""Microseconds per store operation, one awaited call at a time, for each backend.

    PYTHONPATH=. python bench/store.py [--n 2000] [--postgres DSN]

SQLite runs on a temporary file; PostgreSQL (skipped when unreachable, or with ``--postgres ''``) in a
temporary schema that is dropped afterwards. Prints a Markdown table of the store operations. Approvals end
to end (Confirm and Approve taps through the ``Assistant``, sweeps) are ``bench/approvals.py``'s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from milpa_chat.store import MemoryStore, Store
from milpa_chat.store.sqlite import SqliteStore

OPS = ["get", "insert", "insert durable=False", "take", "hit"]


async def timed(n: int, call: Callable[[int], Awaitable[object]]) -> float:
    for i in range(min(n, 50)):  # warm up connections and prepared statements
        await call(-1 - i)
    start = time.perf_counter()
    for i in range(n):
        await call(i)
    return (time.perf_counter() - start) / n * 1e6


async def measure(store: Store, n: int) -> dict[str, float]:
    await store.put("bench", "hot", {"status": "pending", "tool": "refund", "amount": 12.5})
    results = {
        "get": await timed(n, lambda i: store.get("bench", "hot")),
        "insert": await timed(n, lambda i: store.insert("tok", f"t{i}", {"approval": "a1", "n": i}, ttl=600)),
        "insert durable=False": await timed(
            n, lambda i: store.insert("deliveries", f"d{i}", {"chat": "7"}, ttl=600, durable=False)
        ),
        "take": await timed(n, lambda i: store.take("tok", f"t{i}")),
        "hit": await timed(n, lambda i: store.hit(f"user:{i % 50}", cost=1, limit=10**9, window=60)),
    }
    await store.close()
    return results


def open_postgres(dsn: str) -> tuple[Store, Callable[[], None]] | None:
    try:
        import psycopg

        from milpa_chat.store.postgres import PostgresStore

        schema = f"milpa_bench_{secrets.token_hex(4)}"
        store = PostgresStore(dsn, schema=schema)
    except Exception as exc:
        print(f"PostgreSQL skipped: {exc}", file=sys.stderr)
        return None

    def drop() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')

    return store, drop


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2000, help="operations per measurement")
    parser.add_argument(
        "--postgres",
        default=os.environ.get("MILPA_BENCH_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test"),
        help="PostgreSQL DSN (default: $MILPA_BENCH_POSTGRES_DSN or the local test database); '' skips it",
    )
    args = parser.parse_args()
    rows: dict[str, dict[str, float]] = {"memory": await measure(MemoryStore(), args.n)}
    with tempfile.TemporaryDirectory() as tmp:
        rows["sqlite"] = await measure(SqliteStore(Path(tmp) / "bench.db"), args.n)
    pg = open_postgres(args.postgres) if args.postgres else None
    if pg is not None:
        store, drop = pg
        try:
            rows["postgres"] = await measure(store, args.n)
        finally:
            drop()
    print(f"µs per operation (n={args.n}, one call at a time)\n")
    print("| backend | " + " | ".join(OPS) + " |")
    print("|---|" + "---:|" * len(OPS))
    for name, result in rows.items():
        print(f"| {name} | " + " | ".join(f"{result[op]:.0f}" for op in OPS) + " |")


if __name__ == "__main__":
    asyncio.run(main())

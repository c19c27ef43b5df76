"""End-to-end Confirm and Approve taps through the ``Assistant``, and sweeps, at 10 / 1,000 / 100,000 pending.

    PYTHONPATH=. python bench/approvals.py [--taps 200] [--sizes 10,1000,100000] [--postgres DSN] [--processes 3]

(``make bench`` runs it.) The whole bench runs in ``--processes`` fresh processes, one after another, and every
cell is the median of theirs, the "each process" column showing every process's Confirm p50: a process keeps for
its life what it settled into at start-up (``bench/telegram.py`` says what moves with it), and two processes
running the same code have measured one row's Confirm p50 at 1.00 and 1.48 ms.

Each backend is seeded with N pending approvals (bulk-loaded, realistic records, due at their expiry,
none due now). Then, one tap at a time, on an in-memory surface (so only the kit and its store count):

* **Confirm tap**: the requester taps Confirm on their own ``delete_note`` card: decision, run, card
  edit, result post;
* **Approve tap**: a manager taps Approve on a ``pay`` card: the same, for a verification;
* the store calls, writes and durable writes each tap makes (a counting wrapper around the store; a write
  made with ``durable=False`` survives a crash of the process, not a power cut, and costs no sync);
* **sweep** with nothing due and with 20 expiring, and the longest the event loop stalled meanwhile
  (a ticker measures its own lateness every millisecond);
* **peer**: the bare store work of a decision, what a bot without the kit does durably for a tap (one
  ``get`` + one compare-and-set ``update``), measured
  in the same run: the "x peer" column is tap p50 / that;
* **the disk's floor**, measured in the same run: an ``fdatasync`` of a 4 KiB write in the SQLite files'
  directory (what SQLite's ``synchronous=FULL`` waits for on each durable commit) and a one-row durable
  ``INSERT`` on PostgreSQL (a round trip and a WAL flush). "over the floor" is Confirm p50 less the durable
  writes of a tap times that floor: the kit's own time a tap, and what the targets bound.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from milpa_chat import ToolRegistry, VerifyPolicy, tool
from milpa_chat.chat import Assistant, ChatUser, Identities, Inbound
from milpa_chat.runtime.approval import COLLECTION, due_of
from milpa_chat.store import MemoryStore, Store
from milpa_chat.testing.transport import RecordingTransport

ALICE, MARIA = ChatUser("1001", "Alice"), ChatUser("2001", "Maria")
APPROVERS = "-500"
IDENTITIES = {
    "roles": {"writer": ["notes:write", "payments:send"], "manager": ["payments:approve"]},
    "users": {"telegram:1001": ["writer"], "telegram:2001": ["manager"]},
    "approvers": {"telegram": [APPROVERS]},
}
WRITES = ("insert", "put", "update", "take", "delete", "append", "trim", "hit", "purge_expired")


class Tools:
    @tool("delete_note", "Delete a note", scopes=["notes:write"], mutating=True)
    async def delete_note(self, note_id: int) -> dict[str, Any]:
        return {"deleted": note_id}

    @tool(
        "pay",
        "Send a payment",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",)),
    )
    async def pay(self, to: str, amount: float) -> dict[str, Any]:
        return {"paid": amount, "to": to}


class Counting:
    """Counts the store calls (and writes) made through it; everything else passes through."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.clock = inner.clock
        self.calls = self.writes = self.durable = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr) or name.startswith("_"):
            return attr

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            self.writes += name in WRITES
            self.durable += name in WRITES and kwargs.get("durable", True) is not False
            return await attr(*args, **kwargs)

        return counted


def build(store: Store) -> tuple[Assistant, RecordingTransport, Counting]:
    counting = Counting(store)
    registry = ToolRegistry(store=counting)  # type: ignore[arg-type]
    registry.scan(Tools())
    assistant = Assistant(registry, Identities.from_dict(IDENTITIES), approval_ttl=3600)
    surface = RecordingTransport("telegram")
    assistant.attach(surface)
    return assistant, surface, counting


async def template(kind: str) -> dict[str, Any]:
    """A realistic pending record (as the assistant writes it), to bulk-load copies of."""
    assistant, surface, _ = build(MemoryStore())
    await surface.say(assistant, ALICE, "/pay ACME 10" if kind == "verification" else "/delete_note 3")
    (approval,) = await assistant.approvals.listing()
    return approval.data


async def seed(store: Store, n: int, where: dict[str, Any]) -> None:
    base = await template("verification")
    far = time.time() + 30 * 86400
    rows = []
    for _ in range(n):
        value = {**base, "expires_at": far, "created_at": time.time()}
        rows.append((secrets.token_hex(16), value, due_of(value, time.time())))
    if isinstance(store, MemoryStore):
        for key, value, due in rows:
            await store.insert(COLLECTION, key, value, due=due)
    elif where["backend"] == "sqlite":
        import sqlite3

        conn = sqlite3.connect(where["path"])
        now = time.time()
        conn.executemany(
            "INSERT INTO milpa_records VALUES (?, ?, ?, 1, ?, ?, NULL, ?)",
            [(COLLECTION, k, json.dumps(v, separators=(",", ":")), now, now, d) for k, v, d in rows],
        )
        conn.commit()
        conn.close()
    else:
        import psycopg

        with psycopg.connect(where["dsn"]) as conn, conn.cursor() as cur:
            now = time.time()
            with cur.copy(f'COPY "{where["schema"]}".milpa_records FROM STDIN') as copy:
                for k, v, d in rows:
                    copy.write_row((COLLECTION, k, json.dumps(v), 1, now, now, None, d))
            conn.commit()


async def one_tap(
    assistant: Assistant, surface: RecordingTransport, counting: Counting, kind: str
) -> tuple[float, int, int, int]:
    if kind == "confirm":
        await surface.say(assistant, ALICE, "/delete_note 3")
        card, who, word = surface.last(ALICE.id), ALICE, "Confirm"
    else:
        await surface.say(assistant, ALICE, "/pay ACME 10")
        card, who, word = surface.last(APPROVERS), MARIA, "Approve"
    button = card.button(word)
    inbound = Inbound("telegram", card.chat_id, who, action=button.action, ref=button.ref, message_id=card.message_id)
    calls, writes, durable = counting.calls, counting.writes, counting.durable
    start = time.perf_counter()
    await assistant.handle(inbound, surface)
    took = time.perf_counter() - start
    return took * 1000, counting.calls - calls, counting.writes - writes, counting.durable - durable


async def stall_while(work: Awaitable[Any]) -> tuple[float, float]:
    """(ms the work took, longest event-loop stall in ms while it ran)."""
    worst = 0.0
    done = False

    async def ticker() -> None:
        nonlocal worst
        while not done:
            t = time.perf_counter()
            await asyncio.sleep(0.001)
            worst = max(worst, (time.perf_counter() - t - 0.001) * 1000)

    tick = asyncio.ensure_future(ticker())
    start = time.perf_counter()
    await work
    took = (time.perf_counter() - start) * 1000
    done = True
    await tick
    return took, worst


async def peer(store: Store, taps: int) -> float:
    """p50 ms of the bare store work of one decision: get + compare-and-set update."""
    await store.put("peer", "a", {"state": "pending", "votes": []})
    times = []
    for _ in range(taps):
        start = time.perf_counter()
        rec = await store.get("peer", "a")
        assert rec is not None
        await store.update("peer", "a", {**rec.value, "n": rec.version}, expected_version=rec.version)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def fsync_floor(directory: str, n: int = 200) -> float:
    """p50 ms of a 4 KiB write and ``fdatasync`` in ``directory`` (SQLite syncs its WAL so on Linux)."""
    path = Path(directory) / "floor.bin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    sync = getattr(os, "fdatasync", os.fsync)
    block = secrets.token_bytes(4096)
    times = []
    try:
        for i in range(n):
            os.pwrite(fd, block, (i % 64) * 4096)
            start = time.perf_counter()
            sync(fd)
            times.append((time.perf_counter() - start) * 1000)
    finally:
        os.close(fd)
        path.unlink()
    return statistics.median(times)


def syscall_us(n: int = 100_000) -> float:
    """µs of the cheapest system call (``getppid``): what entering the kernel costs on this machine, which every
    write, sync, socket call and wait of a tap pays (it has measured 0.1-0.3 µs on some machines, 1.7 on others)."""
    start = time.perf_counter()
    for _ in range(n):
        os.getppid()
    return (time.perf_counter() - start) / n * 1e6


def postgres_floor(dsn: str, n: int = 200) -> float:
    """p50 ms of a one-row durable ``INSERT`` (autocommit: a round trip and a WAL flush)."""
    import psycopg

    table = f"milpa_floor_{secrets.token_hex(4)}"  # a logged table: a temporary one writes no WAL
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (n int)")
        times = []
        try:
            for i in range(n):
                start = time.perf_counter()
                conn.execute(f"INSERT INTO {table} VALUES (%s)", (i,))
                times.append((time.perf_counter() - start) * 1000)
        finally:
            conn.execute(f"DROP TABLE {table}")
    return statistics.median(times)


async def measure(open_store: Callable[[], tuple[Store, dict[str, Any]]], n: int, taps: int) -> dict[str, Any]:
    store, where = open_store()
    await seed(store, n, where)
    assistant, surface, counting = build(store)
    row: dict[str, Any] = {"pending": n}
    for kind in ("confirm", "approve"):
        samples = [await one_tap(assistant, surface, counting, kind) for _ in range(taps)]
        ms = sorted(s[0] for s in samples)
        row[kind] = (ms[len(ms) // 2], ms[int(len(ms) * 0.99) - 1], samples[-1][1], samples[-1][2], samples[-1][3])
    row["sweep_idle"] = await stall_while(assistant.sweep())
    for _ in range(20):
        await surface.say(assistant, ALICE, "/pay ACME 1")
    clock_shift = 3601.0  # the 20 new requests expire after an hour; the seeded ones in 30 days
    store.clock = counting.clock = lambda: time.time() + clock_shift  # type: ignore[method-assign]
    row["sweep_20"] = await stall_while(assistant.sweep())
    store.clock = counting.clock = time.time  # type: ignore[method-assign]
    row["peer"] = await peer(store, taps)
    await store.close()
    return row


Table = dict[str, Any]  # {"backend": label, "floor": ms (0: syncs nothing), "rows": [measure(...) per size]}


def print_table(table: Table) -> None:
    """One backend's rows; merged from several processes, each row's ``confirm_each`` is every process's Confirm
    p50 (the other cells are medians)."""
    backend, rows, floor = table["backend"], table["rows"], table["floor"]
    print(
        f"\n{backend}: ms per tap through the Assistant (p50 / p99), store calls / writes / durable writes "
        "per tap, sweeps\n"
    )
    print(
        "| pending | Confirm p50 | each process | p99 | calls/writes/durable | over the floor | Approve p50 | p99 "
        "| calls/writes/durable | x peer (Confirm) "
        "| sweep, none due | stall | sweep, 20 expire | stall | peer get+CAS p50 |"
    )
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        c, a = r["confirm"], r["approve"]
        spread = " ".join(f"{v:.2f}" for v in r["confirm_each"]) if "confirm_each" in r else f"{c[0]:.2f}"
        print(
            f"| {r['pending']:,} | {c[0]:.2f} | {spread} | {c[1]:.2f} | {c[2]} / {c[3]} / {c[4]} "
            f"| {c[0] - c[4] * floor:.2f} | {a[0]:.2f} | {a[1]:.2f} | "
            f"{a[2]} / {a[3]} / {a[4]} | {c[0] / r['peer']:.1f}x | {r['sweep_idle'][0]:.2f} | "
            f"{r['sweep_idle'][1]:.2f} | "
            f"{r['sweep_20'][0]:.1f} | {r['sweep_20'][1]:.2f} | {r['peer']:.3f} |"
        )


def print_tables(tables: list[Table], syscall: float) -> None:
    print(f"this machine: a system call (getppid) takes {syscall:.2f} µs")
    for table in tables:
        if table["floor_text"]:
            print(f"\n{table['floor_text']}: p50 {table['floor']:.3f} ms")
        print_table(table)


async def run(sizes: list[int], taps: int, dsn: str | None) -> tuple[list[Table], float]:
    """Every backend's table, measured in this process, and what a system call costs here."""

    def memory() -> tuple[Store, dict[str, Any]]:
        return MemoryStore(), {"backend": "memory"}

    syscall = syscall_us()
    tables: list[Table] = [
        {"backend": "memory", "floor": 0.0, "floor_text": "", "rows": [await measure(memory, n, taps) for n in sizes]}
    ]
    with tempfile.TemporaryDirectory() as tmp:
        floor = fsync_floor(tmp)

        def sqlite() -> tuple[Store, dict[str, Any]]:
            from milpa_chat.store.sqlite import SqliteStore

            path = Path(tmp) / f"bench-{secrets.token_hex(3)}.db"
            return SqliteStore(path), {"backend": "sqlite", "path": str(path)}

        tables.append(
            {
                "backend": "sqlite (synchronous=FULL, the default)",
                "floor": floor,
                "floor_text": "the disk's floor: a 4 KiB write + fdatasync in the SQLite files' directory",
                "rows": [await measure(sqlite, n, taps) for n in sizes],
            }
        )

        def sqlite_normal() -> tuple[Store, dict[str, Any]]:
            from milpa_chat.store.sqlite import SqliteStore

            path = Path(tmp) / f"bench-{secrets.token_hex(3)}.db"
            return SqliteStore(path, synchronous="NORMAL"), {"backend": "sqlite", "path": str(path)}

        tables.append(
            {
                "backend": "sqlite (synchronous=NORMAL: survives process crashes, not power loss)",
                "floor": 0.0,
                "floor_text": "",
                "rows": [await measure(sqlite_normal, n, taps) for n in sizes],
            }
        )
    if dsn is None:
        return tables, syscall
    schemas: list[str] = []

    def postgres() -> tuple[Store, dict[str, Any]]:
        from milpa_chat.store.postgres import PostgresStore

        schema = f"milpa_bench_{secrets.token_hex(4)}"
        schemas.append(schema)
        return PostgresStore(dsn, schema=schema), {"backend": "postgres", "dsn": dsn, "schema": schema}

    try:
        pg_floor = postgres_floor(dsn)
        tables.append(
            {
                "backend": "postgres",
                "floor": pg_floor,
                "floor_text": "PostgreSQL's floor: a one-row durable INSERT (round trip + WAL flush)",
                "rows": [await measure(postgres, n, taps) for n in sizes],
            }
        )
    except Exception as exc:
        print(f"PostgreSQL skipped: {exc}", file=sys.stderr)
    finally:
        try:
            import psycopg

            with psycopg.connect(dsn, autocommit=True) as conn:
                for schema in schemas:
                    conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        except Exception as exc:
            print(f"could not drop the benchmark schemas {schemas}: {exc}", file=sys.stderr)
    return tables, syscall


def _median_of(values: list[Any]) -> Any:
    """The median of numbers; of equal-length sequences, the median at each place."""
    if isinstance(values[0], list | tuple):
        return [_median_of([v[i] for v in values]) for i in range(len(values[0]))]
    return statistics.median(values)


def merged(runs: list[tuple[list[Table], float]]) -> tuple[list[Table], float]:
    """The tables of several processes as one: every cell the median of the processes', each row's every Confirm
    p50 kept (``confirm_each``). A backend missing from a process (PostgreSQL did not answer) is left out; store
    calls, writes and durable writes a tap are the same code in every process, and a row whose counts differ says
    so on stderr (the first process's are shown)."""
    by_backend = [{t["backend"]: t for t in tables} for tables, _ in runs]
    merged_tables: list[Table] = []
    for first in runs[0][0]:
        label = first["backend"]
        if any(label not in tables for tables in by_backend):
            print(f"{label}: not measured in every process, left out", file=sys.stderr)
            continue
        rows = []
        for j, row in enumerate(first["rows"]):
            each = [tables[label]["rows"][j] for tables in by_backend]
            out = {key: _median_of([r[key] for r in each]) for key in row}
            out["pending"] = row["pending"]
            for kind in ("confirm", "approve"):
                counts = {tuple(r[kind][2:]) for r in each}
                if len(counts) > 1:
                    differ = f"{label}, {row['pending']:,} pending: {kind} counts differ: {sorted(counts)}"
                    print(differ, file=sys.stderr)
                out[kind][2:] = row[kind][2:]
            out["confirm_each"] = [r["confirm"][0] for r in each]
            rows.append(out)
        floor = statistics.median(tables[label]["floor"] for tables in by_backend)
        merged_tables.append({**first, "floor": floor, "rows": rows})
    return merged_tables, statistics.median(syscall for _, syscall in runs)


ROOT = str(Path(__file__).resolve().parent.parent)  # the checkout: the children import bench's own helpers from it


def in_processes(n: int, argv: list[str]) -> tuple[list[Table], float]:
    """Run the whole bench ``n`` times, one fresh process after another, and merge what they measured."""
    runs = []
    for _ in range(n):
        child = subprocess.run(
            [sys.executable, __file__, *argv, "--processes", "1", "--json"],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))},
        )
        sys.stderr.write(child.stderr)
        tables, syscall = json.loads(child.stdout)
        runs.append((tables, syscall))
    return merged(runs)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--taps", type=int, default=200)
    parser.add_argument("--sizes", default="10,1000,100000")
    parser.add_argument(
        "--postgres",
        default=os.environ.get("MILPA_BENCH_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test"),
        help="PostgreSQL DSN (default: $MILPA_BENCH_POSTGRES_DSN or the local test database); '' skips it",
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=3,
        help="run the bench in this many fresh processes, one after another, and print the medians (default 3)",
    )
    parser.add_argument("--json", action="store_true", help="print what this process measured as JSON")
    args = parser.parse_args()
    if args.processes > 1:
        forwarded = ["--taps", str(args.taps), "--sizes", args.sizes, "--postgres", args.postgres]
        print(f"{args.processes} processes, one after another; every cell the median of theirs")
        print_tables(*in_processes(args.processes, forwarded))
    else:
        measured = asyncio.run(run([int(s) for s in args.sizes.split(",")], args.taps, args.postgres or None))
        if args.json:
            print(json.dumps(measured))
        else:
            print_tables(*measured)

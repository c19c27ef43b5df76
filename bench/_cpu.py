"""Where the CPU went during a measured window: per process, from ``/proc/PID/stat`` (utime + stime).

A :class:`CpuWindow` is opened and closed around the measured part of a bench; each role (the workers,
the balancer, the harness, PostgreSQL's backends of the fleet, ...) names a callable that returns its process
ids at that moment, so processes that come and go (pooled database connections) are counted: a process seen
at both ends counts its difference, one first seen at the end counts all its time (it started in the window).
``/proc/stat`` gives the whole machine's busy time over the same window, so what other programs used is shown.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

TICK = os.sysconf("SC_CLK_TCK")


def process_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (every thread of it); ``None`` when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    fields = raw[raw.rindex(b")") + 2 :].split()  # after "pid (comm) ": state is fields[0]
    return (int(fields[11]) + int(fields[12])) / TICK


def machine_busy_seconds() -> float:
    """CPU seconds every core of the machine spent on anything but idle and I/O wait, since boot."""
    with open("/proc/stat") as f:
        cpu = [int(x) for x in f.readline().split()[1:]]
    idle = cpu[3] + (cpu[4] if len(cpu) > 4 else 0)
    return (sum(cpu[:8]) - idle) / TICK


def _sample(pids: Iterable[int]) -> dict[int, float]:
    found = {pid: process_seconds(pid) for pid in pids}
    return {pid: s for pid, s in found.items() if s is not None}


@dataclass
class CpuWindow:
    """CPU seconds per role between :meth:`start` and :meth:`stop`; ``roles``: name -> process ids now."""

    roles: Mapping[str, Callable[[], Iterable[int]]]
    seconds: dict[str, float] = field(default_factory=dict)
    processes: dict[str, int] = field(default_factory=dict)
    wall: float = 0.0
    machine: float = 0.0
    _start: dict[str, dict[int, float]] = field(default_factory=dict)
    _t0: float = 0.0
    _m0: float = 0.0

    def start(self) -> None:
        self._start = {role: _sample(pids()) for role, pids in self.roles.items()}
        self._t0, self._m0 = time.perf_counter(), machine_busy_seconds()

    def stop(self) -> None:
        self.wall = time.perf_counter() - self._t0
        self.machine = machine_busy_seconds() - self._m0
        for role, pids in self.roles.items():
            before, after = self._start[role], _sample(pids())
            self.seconds[role] = sum(s - before.get(pid, 0.0) for pid, s in after.items())
            self.processes[role] = len(after)

    @property
    def ours(self) -> float:
        return sum(self.seconds.values())


def merged(windows: Iterable[CpuWindow]) -> CpuWindow:
    """One window adding up several (the rounds of one row)."""
    total = CpuWindow(roles={})
    for w in windows:
        total.wall += w.wall
        total.machine += w.machine
        for role, s in w.seconds.items():
            total.seconds[role] = total.seconds.get(role, 0.0) + s
            total.processes[role] = max(total.processes.get(role, 0), w.processes.get(role, 0))
    return total


def table(rows: Mapping[str, tuple[CpuWindow, int]], roles: list[str]) -> list[str]:
    """Markdown lines: for each row (a name -> its window and the confirmations in it), the cores each role
    used on average and its CPU milliseconds per confirmation, the machine's busy cores and what else ran."""
    head = " | ".join(f"{r} cores · ms/conf" for r in roles)
    lines = [
        f"| fleet | confirmations/s | {head} | ours, cores | machine busy, cores | "
        "workers' confirmations per worker CPU-second |",
        "|---|---:|" + "---:|" * len(roles) + "---:|---:|---:|",
    ]
    for name, (w, done) in rows.items():
        cells = " | ".join(
            f"{w.seconds.get(r, 0.0) / w.wall:.2f} · {1000 * w.seconds.get(r, 0.0) / max(done, 1):.1f}" for r in roles
        )
        workers = w.seconds.get("workers", 0.0)
        per = f"{done / workers:,.0f}" if workers > 0 else "-"
        lines.append(
            f"| {name} | {done / w.wall:,.0f} | {cells} | {w.ours / w.wall:.2f} | {w.machine / w.wall:.2f} | {per} |"
        )
    return lines


class PgWaits:
    """What the fleet's PostgreSQL backends were doing, sampled from ``pg_stat_activity`` every ``every``
    seconds while running: for each wait event (``CPU`` when an active backend waits for nothing), how many
    backends were in it on average. Lock waits (``Lock:transactionid``, ``Lock:advisory``, ``Lock:tuple``)
    would show rows or locks the workers queue on; ``IO:WALSync`` / ``LWLock:WALWrite`` the commits' flushes."""

    def __init__(self, dsn: str, application_name: str, every: float = 0.02) -> None:
        self.dsn, self.application_name, self.every = dsn, application_name, every
        self.samples = 0
        self.counts: dict[str, int] = {}
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> PgWaits:
        import psycopg

        self._conn = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True, connect_timeout=3)
        self._task = asyncio.create_task(self._sample())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        await self._conn.close()

    async def _sample(self) -> None:
        query = (
            "SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU'), count(*) FROM pg_stat_activity "
            "WHERE application_name = %s AND state = 'active' GROUP BY 1"
        )
        while True:
            rows = await (await self._conn.execute(query, (self.application_name,))).fetchall()
            self.samples += 1
            for event, n in rows:
                self.counts[str(event)] = self.counts.get(str(event), 0) + int(n)
            await asyncio.sleep(self.every)

    def add(self, other: PgWaits) -> None:
        self.samples += other.samples
        for event, n in other.counts.items():
            self.counts[event] = self.counts.get(event, 0) + n

    def summary(self, top: int = 4) -> str:
        """``event average-backends`` for the ``top`` events, busiest first."""
        if not self.samples:
            return "-"
        ranked = sorted(self.counts.items(), key=lambda kv: -kv[1])[:top]
        return ", ".join(f"{event} {n / self.samples:.2f}" for event, n in ranked) or "none active"

"""App processes of the benches: every measured app (the kit's bot, a bare handler, a fair peer) runs in an OS
process of its own, and only that process's CPU time counts for it.

The harness (the local Bot API or Web API server and the load it drives) stays in the bench's process, pinned to
the first CPU; an app starts on any CPU (start-up imports overlap) and is pinned to the last CPU once it is ready,
so while it is tapped it has a core to itself and shares it with no server, driver or other app. The harness
and an app talk over the app's stdin/stdout, one line a message:

* the app's first line says it is ready (a URL, or JSON about what it set up);
* ``cpu`` -> the app's ``time.process_time()`` (every thread of the process, nanosecond resolution, which the
  10 ms ticks of ``/proc/PID/stat`` are not), and how many times so far it waited for something (its voluntary
  context switches: each a sleep and a wake-up, whose cost is in its CPU);
* ``freeze`` -> ``gc.collect()`` then ``gc.freeze()``: what start-up allocated leaves the collector's view, in
  the kit's app and its peers alike, once their set-up is over;
* end of input -> the app exits.
"""

from __future__ import annotations

import asyncio
import gc
import os
import resource
import sys
import threading
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import TypeVar

EVERY_CPU = frozenset(os.sched_getaffinity(0))
HARNESS_CPU = frozenset({min(EVERY_CPU)})  # the servers and the load
APP_CPU = frozenset({max(EVERY_CPU)})  # the measured app, alone (the same CPU as the harness on a 1-CPU machine)
T = TypeVar("T")


def pin(pid: int, cpus: frozenset[int]) -> None:
    with suppress(ProcessLookupError):
        os.sched_setaffinity(pid, cpus)


def pin_harness() -> str:
    """Pin this process to the harness CPU; returns how the CPUs are shared, for the report."""
    pin(0, HARNESS_CPU)
    if len(EVERY_CPU) < 2:
        return "one CPU: the harness and the measured app share it"
    return f"harness on CPU {min(HARNESS_CPU)}, the measured app alone on CPU {min(APP_CPU)}"


# ------------------------------------------------------------------ in the app process
def serve_control(ready: str) -> None:
    """Say ``ready`` (one line) and answer the harness from a thread of its own; exit at the end of stdin."""
    out = sys.stdout

    def answer() -> None:
        while line := sys.stdin.readline():
            command = line.strip()
            if command == "cpu":
                said = f"{time.process_time()!r} {resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw}"
            elif command == "freeze":
                gc.collect()
                gc.freeze()
                said = "frozen"
            else:
                said = f"unknown command {command!r}: the harness says cpu or freeze"
            out.write(said + "\n")
            out.flush()
        os._exit(0)  # the harness is done with this app

    out.write(ready.replace("\n", " ") + "\n")
    out.flush()
    threading.Thread(target=answer, name="bench-control", daemon=True).start()


# ------------------------------------------------------------------ in the harness
@dataclass
class AppProcess:
    proc: asyncio.subprocess.Process
    ready: str  # the app's first line
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def ask(self, command: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        async with self.lock:
            self.proc.stdin.write(command.encode() + b"\n")
            await self.proc.stdin.drain()
            return (await asyncio.wait_for(self.proc.stdout.readline(), 30)).decode().strip()

    async def cpu(self) -> float:
        """CPU seconds the app process has used so far."""
        return (await self.usage())[0]

    async def usage(self) -> tuple[float, int]:
        """CPU seconds the app process has used so far, and how many times it waited (voluntary context switches)."""
        cpu, sleeps = (await self.ask("cpu")).split()
        return float(cpu), int(sleeps)

    async def freeze(self) -> None:
        said = await self.ask("freeze")
        if said != "frozen":
            raise RuntimeError(f"the app answered {said!r} to freeze")

    def measured(self) -> None:
        """From now on the app has the measured CPU to itself."""
        pin(self.proc.pid, APP_CPU)


@asynccontextmanager
async def app_process(args: Sequence[str], what: str, env: dict[str, str] | None = None) -> AsyncIterator[AppProcess]:
    """Run ``python ARGS`` (which calls :func:`serve_control`); its start-up may use any CPU."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    pin(proc.pid, EVERY_CPU)
    try:
        assert proc.stdout is not None
        ready = (await asyncio.wait_for(proc.stdout.readline(), 120)).decode().strip()
        if not ready:
            raise RuntimeError(f"the {what} did not start (exit code {await proc.wait()})")
        app = AppProcess(proc, ready)
        app.measured()
        yield app
    finally:
        if proc.returncode is None:
            assert proc.stdin is not None
            proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                proc.kill()
                await proc.wait()


def in_turn(members: Sequence[T], number: int) -> list[T]:
    """The order of slice ``number``: the members rotated by one place a slice (A B C, B C A, C A B, ...), so each
    app goes at every place of the order equally often (a drift of the machine's speed costs every app alike), and
    with three apps or more none runs twice in a row (an app running again right after itself finds its caches
    warm: reversing the order every slice, A B C C B A, gave the apps at its ends that warm start half the time,
    measured at 4-6 % less CPU a tap between two copies of the same app)."""
    k = number % len(members) if members else 0
    return [*members[k:], *members[:k]]

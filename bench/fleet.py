# ruff: noqa: ASYNC109, ASYNC220, ASYNC240  (a bench harness: short blocking process and file calls, own timeouts)
"""Button taps per second through a fleet of Telegram webhook workers on PostgreSQL: 1, 2 and 4 workers.

    python bench/fleet.py [--workers 1,2,4] [--taps 200] [--runs 150] [--rounds 2] [--window 16] [--audit-trail all]
                          [--chaos 10]

PostgreSQL: ``MILPA_BENCH_POSTGRES_DSN`` (``postgresql://postgres@127.0.0.1:5432/test``); HAProxy: /usr/sbin/haproxy.

Each size is a fleet as ``docs/deploy.md`` describes and ``tests/fleet`` runs: ``python -m milpa_chat.fleet
telegram`` workers (the unit's command, the example tools, 5 PostgreSQL connections each) behind HAProxy
(``/usr/sbin/haproxy`` with the configuration ``milpa_chat.fleet.haproxy_config`` makes), all on one
PostgreSQL schema of their own (dropped afterwards), and the local Bot API server delivering updates to
the balancer's webhook. Users tap with at most ``--window`` taps unanswered at a time. Rows, for each size,
each run ``--rounds`` times (sizes interleaved):

* refused tap: someone other than the requester taps Confirm on a pending card (delivery de-duplication,
  approval read, one alert answer); done once answered. The local Bot API server delivers one update at a
  time and waits for the webhook's answer (Telegram delivers up to 40 at once), so this row is bounded by
  the round trip through the balancer more than by the workers;
* confirm and run: each tap confirms its own pending ``delete_note`` card; the tool runs, the card is edited
  and the result sent. ``--window`` users confirm, each waiting for their result before the next tap (so the
  runs in progress are bounded as the answered taps are); done once every result was sent.

Each is measured with the workers keeping the hash-chained audit trail in the store (``MILPA_AUDIT_TRAIL=1``,
the default of a deployment), each worker in a lane of its own (the default) or all in the main chain
(``MILPA_AUDIT_LANE=""``), and without it (``--audit-trail on|chain|off|both|all``). The workers' cap on
pending requests a requester may have open is raised to ``--runs`` (``MILPA_MAX_PENDING``).

Prints four Markdown tables. The first (medians of the rounds): taps per second and the ratio against 1
worker, and confirmations per CPU-second of the workers (every round added up), which does not depend on how
many cores were left for them: flat from 1 to 4 workers means nothing the workers share (a row, the trail's
head, a lock) costs them more as they are more; falling means it does. The second: where the CPU went while
confirming, per role, from ``/proc/PID/stat`` (``bench/_cpu.py``): the workers, HAProxy, the harness (this
process: the Bot API server and the users), the fleet's PostgreSQL backends and PostgreSQL's own processes,
each as cores kept busy and CPU milliseconds a confirmation, with the whole machine's busy cores (what else
ran). The third: how far this machine lets a fleet go: with every role's CPU a confirmation added up, the most
its cores could confirm (cores / CPU a confirmation), against what 1 worker measured, and the cores that 3x the
confirmations of 1 worker would take at that CPU a confirmation. The fourth: what the fleet's PostgreSQL backends
waited for (``pg_stat_activity``, every 20 ms). The harness, HAProxy, PostgreSQL and every worker share the
machine's cores: a fleet scales only as far as cores are left for its workers, and one worker (one Python
process) uses one core at most.

Then, unless ``--chaos 0``: the decision latency under chaos, the run ``tests/fleet/test_chaos.py`` makes (its
harness, seed 16) for ``--chaos`` seconds (10 by default, about 45 s with the fleet's start-up and settling;
the test runs 30): two Telegram and two Slack workers
SIGKILLed and restarted and their database connections terminated while people ask and tap on both platforms.
The latency is from a person's first tap on a card to that card showing the decision (p50 and p99, with the
number of decisions seen); the test asserts what must hold whatever the machine (each approved run executed
exactly once, every card converged, the audit trail holds) and prints the latency without a bound.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if sys.path[0] == str(Path(__file__).resolve().parent):
    sys.path.pop(0)  # this directory's telegram.py would shadow the telegram package
sys.path.insert(0, str(ROOT))

from bench._cpu import CpuWindow, PgWaits, merged, table  # noqa: E402
from milpa_chat.fleet import haproxy_config  # noqa: E402
from milpa_chat.runtime.trail import AuditTrail  # noqa: E402
from milpa_chat.runtime.trail_chain import HEAD, LANE_HEADS  # noqa: E402
from milpa_chat.store.postgres import PostgresStore  # noqa: E402
from milpa_chat.testing import BotApiServer, TelegramCallbackQuery, TelegramUpdate, TelegramUser  # noqa: E402

HAPROXY = "/usr/sbin/haproxy"
TOKEN, SECRET = "123456:BENCH-fleet", "bench-fleet-secret_1"
ALICE = TelegramUser(1001, "Alice", "alice")
BOB = TelegramUser(1002, "Bob", "bob")
IDENTITIES = """[users]
"telegram:1001" = ["notes:read", "notes:write"]
"telegram:1002" = ["notes:read"]
"""
RESULT = re.compile(r"Deleted note (\d+)")
DSN = os.environ.get("MILPA_BENCH_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        if proc.poll() is not None:
            raise RuntimeError(f"the process for port {port} exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")
        await asyncio.sleep(0.1)


def drop_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(DSN, autocommit=True, connect_timeout=3) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def worker_command() -> list[str]:
    """The ``ExecStart`` of ``deploy/milpa-telegram@.service``, run with this interpreter."""
    unit = (ROOT / "deploy" / "milpa-telegram@.service").read_text()
    line = next(x for x in unit.splitlines() if x.startswith("ExecStart="))
    _python, *args = line.removeprefix("ExecStart=").split()
    return [sys.executable, *args]


@dataclass
class Fleet:
    server: BotApiServer
    schema: str
    workers: list[subprocess.Popen[bytes]]
    balancer: subprocess.Popen[bytes]


@asynccontextmanager
async def fleet_of(size: int, tmp: Path, *, trail: str = "on", pending: int = 100) -> AsyncIterator[Fleet]:
    """``size`` Telegram workers behind HAProxy on a fresh schema (``trail``: with the audit trail, the
    default of a deployment); stopped and dropped afterwards."""
    schema = f"milpa_bench_{secrets.token_hex(4)}"
    identities = tmp / "identities.toml"
    identities.write_text(IDENTITIES)
    balancer_port = free_port()
    ports = [free_port() for _ in range(size)]
    procs: list[subprocess.Popen[bytes]] = []
    balancer: subprocess.Popen[bytes] | None = None
    async with BotApiServer(TOKEN, webhook_timeout=10.0, callback_query_timeout=300) as server:
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "MILPA_STORE": DSN,
            "MILPA_PG_SCHEMA": schema,
            "MILPA_PG_POOL": "5",
            "MILPA_IDENTITIES": str(identities),
            "MILPA_LISTEN": "127.0.0.1",
            "TELEGRAM_TOKEN": TOKEN,
            "TELEGRAM_BASE_URL": server.base_url,
            "TELEGRAM_WEBHOOK_URL": f"http://127.0.0.1:{balancer_port}/telegram",
            "TELEGRAM_WEBHOOK_SECRET": SECRET,
            "MILPA_AUDIT_TRAIL": "0" if trail == "off" else "1",
            "MILPA_AUDIT_LANE": "" if trail == "chain" else "worker",
            "MILPA_MAX_PENDING": str(max(100, pending)),
        }
        config = tmp / f"haproxy-{size}.cfg"
        config.write_text(haproxy_config(balancer_port, [f"127.0.0.1:{p}" for p in ports], []))
        try:
            log = tmp / "haproxy.log"
            balancer = subprocess.Popen(
                [HAPROXY, "-db", "-f", str(config)], stdout=log.open("wb"), stderr=subprocess.STDOUT
            )
            await wait_port(balancer_port, balancer, log)
            logs = [tmp / f"worker-{size}-{i}.log" for i in range(size)]
            for group in (range(1), range(1, size)):  # the first alone (it creates the tables), then the others at once
                for i in group:
                    procs.append(
                        subprocess.Popen(
                            worker_command(),
                            cwd=ROOT,
                            env={**env, "MILPA_PORT": str(ports[i])},
                            stdout=logs[i].open("wb"),
                            stderr=subprocess.STDOUT,
                        )
                    )
                await asyncio.gather(*(wait_port(ports[i], procs[i], logs[i]) for i in group))
            await server.wait_until(lambda: server.webhook is not None, timeout=20, what="the webhook")
            await asyncio.sleep(1.0)  # the balancer's health checks (every 500 ms) see every worker
            yield Fleet(server, schema, procs, balancer)
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGKILL)
                    proc.wait(10)
            if balancer is not None:
                balancer.terminate()
                balancer.wait(10)
            drop_schema(schema)


async def pushed(server: BotApiServer, push: Callable[[], Awaitable[TelegramUpdate]]) -> TelegramUpdate:
    """``push()`` (one update); when the balancer's connection is reset under the delivery (the test server's
    HTTP client may reuse a keep-alive connection the other side just closed), deliver it again, as Telegram
    retries a failed delivery (the workers de-duplicate updates)."""
    for _ in range(5):
        try:
            return await push()
        except ConnectionResetError:
            update = server.feed.history[-1]
            for _ in range(5):
                try:
                    await server.deliver_pending()
                    return update
                except ConnectionResetError:
                    await asyncio.sleep(0.05)
    raise RuntimeError("the webhook delivery kept being reset by the balancer")


async def tap_all(server: BotApiServer, taps: Sequence[Callable[[], Awaitable[TelegramUpdate]]], window: int) -> float:
    """Seconds until every tap was answered, with at most ``window`` unanswered at a time."""
    waiting = deque(taps)
    outstanding: dict[str, TelegramCallbackQuery] = {}

    def progressed() -> bool:
        answered = [q for q in outstanding.values() if q.answered]
        for query in answered:
            del outstanding[query.id]
        return bool(answered) or not outstanding

    start = time.perf_counter()
    while waiting or outstanding:
        while waiting and len(outstanding) < window:
            query = server.callback_query(await pushed(server, waiting.popleft()))
            outstanding[query.id] = query
        await server.wait_until(progressed, timeout=120, what="an answer")
    return time.perf_counter() - start


async def card_for(server: BotApiServer, note: int) -> tuple[int, str]:
    update = await pushed(server, lambda: server.send_message(ALICE.id, ALICE, f"/delete_note {note}"))
    card = await server.wait_for_message(ALICE.id, since=update, timeout=30)
    data = next(b["callback_data"] for row in card.buttons for b in row if b["callback_data"].startswith("confirm:"))
    return card.message_id, data


async def open_cards(server: BotApiServer, notes: Sequence[int], window: int) -> list[tuple[int, str]]:
    """A pending ``delete_note`` card for each of ``notes`` (its message and its Confirm button's data), asked
    for ``window`` at a time."""
    cards: list[tuple[int, str]] = []
    index = server.mark()

    def new_cards() -> int:
        nonlocal index
        calls = server.calls
        while index < len(calls) and calls[index].status:
            call = calls[index]
            index += 1
            if call.method == "sendMessage" and call.ok and call.result["chat"]["id"] == ALICE.id:
                card = server.message(ALICE.id, call.result["message_id"])
                data = [b["callback_data"] for row in card.buttons for b in row if "callback_data" in b]
                cards.extend((card.message_id, d) for d in data if d.startswith("confirm:"))
        return len(cards)

    for start in range(0, len(notes), window):
        chunk = notes[start : start + window]
        for note in chunk:
            await pushed(server, lambda n=note: server.send_message(ALICE.id, ALICE, f"/delete_note {n}"))  # type: ignore[misc]
        wanted = start + len(chunk)
        await server.wait_until(lambda w=wanted: new_cards() >= w, timeout=60, what="the cards")  # type: ignore[misc]
    return cards


class Results:
    """The notes whose result ("Deleted note N") the server has sent since ``mark``, without rescanning."""

    def __init__(self, server: BotApiServer) -> None:
        self.server, self.index, self.notes = server, server.mark(), set[int]()

    def __call__(self) -> set[int]:
        calls = self.server.calls
        while self.index < len(calls) and calls[self.index].status:
            call = calls[self.index]
            found = RESULT.search(str(call.params.get("text", ""))) if call.method == "sendMessage" else None
            if found and call.ok:
                self.notes.add(int(found.group(1)))
            self.index += 1
        return self.notes


async def confirm_all(server: BotApiServer, cards: Sequence[tuple[int, str]], window: int) -> float:
    """Seconds until every card was confirmed and its result sent, with at most ``window`` confirmations whose
    result has not arrived yet (that many users, each waiting for their result before the next tap)."""
    waiting = deque(cards)
    results = Results(server)
    tapped = 0
    start = time.perf_counter()
    while waiting or len(results()) < tapped:
        while waiting and tapped - len(results()) < window:
            message_id, data = waiting.popleft()
            await pushed(server, lambda m=message_id, d=data: server.tap(ALICE.id, m, ALICE, d))  # type: ignore[misc]
            tapped += 1
        done = len(results())
        await server.wait_until(
            lambda d=done, t=tapped: len(results()) > d or len(results()) == t,  # type: ignore[misc]
            timeout=300,
            what="the results",
        )
    return time.perf_counter() - start


def postgres_pids(query: str, *params: str) -> list[int]:
    import psycopg

    with psycopg.connect(DSN, autocommit=True, connect_timeout=3) as conn:
        return [int(row[0]) for row in conn.execute(query, params)]


ROLES = ["workers", "HAProxy", "harness", "PostgreSQL backends", "PostgreSQL others"]


def cpu_window(fleet: Fleet) -> CpuWindow:
    """The processes of each role: the workers, the balancer, this process (the Bot API server and the users),
    the fleet's PostgreSQL backends (its connections are named after its schema) and PostgreSQL's own
    processes (WAL writer, checkpointer, ...)."""
    workers = [p.pid for p in fleet.workers]
    return CpuWindow(
        {
            "workers": lambda: workers,
            "HAProxy": lambda: [fleet.balancer.pid],
            "harness": lambda: [os.getpid()],
            "PostgreSQL backends": lambda: postgres_pids(
                "SELECT pid FROM pg_stat_activity WHERE application_name = %s", f"milpa-{fleet.schema}"[:63]
            ),
            "PostgreSQL others": lambda: postgres_pids(
                "SELECT pid FROM pg_stat_activity WHERE backend_type <> 'client backend'"
            ),
        }
    )


@dataclass
class Measured:
    """One round of one fleet: refused taps a second, confirm-and-run taps a second, and, while confirming,
    where the CPU went and what the fleet's PostgreSQL backends waited for."""

    refused: float
    confirmed: float
    cpu: CpuWindow
    waits: PgWaits


async def one_size(size: int, tmp: Path, taps: int, runs: int, window: int, trail: str) -> Measured:
    """One round through a fleet of ``size`` workers."""
    async with fleet_of(size, tmp, trail=trail, pending=runs + 1) as fleet:
        server = fleet.server
        store = PostgresStore(DSN, schema=fleet.schema, max_size=2)
        try:
            for number in range(100, 100 + runs):
                await store.insert("notes", f"{number:08d}", {"id": number, "text": f"note {number}"})
        finally:
            await store.close()
        card, data = await card_for(server, 1)
        warm = [lambda: server.tap(ALICE.id, card, BOB, data) for _ in range(100)]
        await tap_all(server, warm, window)
        refused = [lambda: server.tap(ALICE.id, card, BOB, data) for _ in range(taps)]
        refused_seconds = await tap_all(server, refused, window)
        assert server.callback_queries[-1].answer_text == "Only Alice can confirm this."
        cards = await open_cards(server, range(100, 100 + runs), window)
        assert len(cards) == runs, f"{len(cards)} cards for {runs} notes"
        cpu = cpu_window(fleet)
        async with PgWaits(DSN, f"milpa-{fleet.schema}"[:63]) as waits:
            cpu.start()
            run_seconds = await confirm_all(server, cards, window)
            cpu.stop()
        if trail != "off":  # the trail the fleet wrote holds, every lane of it
            store = PostgresStore(DSN, schema=fleet.schema, max_size=2)
            try:
                verdict = await AuditTrail(store).verify()
                # every batch of appends moves its chain's head once: the head's version counts the batches
                heads = [await store.get(*HEAD)] + [await store.get(LANE_HEADS, name) for name, _, _ in verdict.lanes]
                batches = sum(h.version for h in heads if h is not None)
            finally:
                await store.close()
            assert verdict.ok, verdict
            entries = verdict.checked + sum(n for _, n, _ in verdict.lanes)
            print(
                f"{size} worker(s), trail {trail}: the trail holds ({verdict.checked} entries in the main chain, "
                f"{entries - verdict.checked} in {len(verdict.lanes)} lane(s)); {batches} head writes, "
                f"{entries / max(batches, 1):.1f} entries a batch"
            )
        return Measured(taps / refused_seconds, runs / run_seconds, cpu, waits)


async def chaos_latency(seconds: float, seed: int = 16) -> None:
    """Print the decision latency of one chaos run (``tests/fleet``'s harness) of ``seconds``."""
    os.environ.setdefault("MILPA_TEST_POSTGRES_DSN", DSN)  # the harness's database: the bench's
    from tests.fleet._chaos_run import chaos_figures

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        figures, _ = await chaos_figures(Path(tmp), seed, seconds)
    held = all(
        figures[k] == 0
        for k in (
            "approved runs not executed exactly once",
            "executions of requests not approved",
            "cards not converged to their record",
        )
    ) and str(figures["audit trail"]).startswith("The audit trail holds")
    print(
        f"\nchaos ({seconds:.0f} s, seed {seed}, 2 Telegram + 2 Slack workers; {figures['worker kills']} kills, "
        f"{figures['backends terminated']} database connections terminated; {time.perf_counter() - started:.0f} s "
        f"with start-up and settling): decision latency p50 {figures['decision latency p50 (s)']} s, "
        f"p99 {figures['decision latency p99 (s)']} s over {figures['decisions seen on a card after a tap']} "
        f"decisions; {figures['approvals']} approvals, exactly once and converged: {'yes' if held else 'NO'}"
    )


async def main(
    sizes: list[int], taps: int, runs: int, rounds: int, window: int, trails: list[str], chaos: float = 0.0
) -> None:
    if not os.access(HAPROXY, os.X_OK):
        raise SystemExit(f"{HAPROXY} is missing: apt-get install -y haproxy")
    try:
        import psycopg

        psycopg.connect(DSN, connect_timeout=3).close()
    except Exception as exc:
        raise SystemExit(
            f"PostgreSQL at {DSN} is unreachable ({type(exc).__name__}: {exc}); "
            "set MILPA_BENCH_POSTGRES_DSN to a database the bench may create schemas in"
        ) from None
    started = time.perf_counter()
    measured: dict[tuple[str, int], list[Measured]] = {(t, n): [] for t in trails for n in sizes}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(rounds):
            for trail in trails:
                for size in sizes:
                    measured[trail, size].append(await one_size(size, Path(tmp), taps, runs, window, trail))
    refused = {k: statistics.median(m.refused for m in rows) for k, rows in measured.items()}
    confirmed = {k: statistics.median(m.confirmed for m in rows) for k, rows in measured.items()}
    base = sizes[0]
    print(
        f"{rounds} rounds, {window} taps in flight at most, {os.cpu_count()} cores shared by the harness, HAProxy, "
        f"PostgreSQL and the workers; Python {sys.version.split()[0]}; {time.perf_counter() - started:.0f} s\n"
    )
    cpu = {k: merged(m.cpu for m in rows) for k, rows in measured.items()}
    per_cpu = {k: runs * rounds / max(w.seconds["workers"], 1e-9) for k, w in cpu.items()}
    print(
        f"| audit trail | Telegram webhook workers | refused taps/s ({taps} a round) | vs {base} worker | "
        f"confirm and run taps/s ({runs} a round) | vs {base} worker | confirmations per worker CPU-second | "
        f"vs {base} worker |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for trail in trails:
        name = {
            "on": "on, a lane per worker (the default)",
            "chain": 'on, one chain (MILPA_AUDIT_LANE="")',
            "off": "off (MILPA_AUDIT_TRAIL=0)",
        }[trail]
        for size in sizes:
            k, b = (trail, size), (trail, base)
            print(
                f"| {name} | {size} | {refused[k]:,.0f} | {refused[k] / refused[b]:.0%} | {confirmed[k]:,.0f} | "
                f"{confirmed[k] / confirmed[b]:.0%} | {per_cpu[k]:,.0f} | {per_cpu[k] / per_cpu[b]:.0%} |"
            )
    print(
        "\nWhere the CPU went while confirming (every round added up): cores a role kept busy on average and its "
        "CPU milliseconds per confirmation\n"
    )
    cpu_rows = {f"{trail}, {size}": (cpu[trail, size], runs * rounds) for trail in trails for size in sizes}
    print("\n".join(table(cpu_rows, ROLES)))
    cores = os.cpu_count() or 1
    print(
        f"\nHow far this machine lets a fleet go: every role above shares its {cores} cores, so at a size's CPU a "
        "confirmation (all roles added up) the most it could confirm is cores / that CPU; and the cores 3x the "
        f"confirmations of {base} worker would take at that CPU a confirmation\n"
    )
    print(
        f"| fleet | confirmations/s | CPU ms a confirmation, all roles | at most on {cores} cores, /s | "
        f"that vs {base} worker measured | cores for 3x {base} worker |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for trail in trails:
        for size in sizes:
            w, done = cpu[trail, size], runs * rounds
            per = w.ours / max(done, 1)
            most = cores / per if per > 0 else float("inf")
            rate_1 = confirmed[trail, base]
            print(
                f"| {trail}, {size} | {done / w.wall:,.0f} | {per * 1000:.1f} | {most:,.0f} | {most / rate_1:.2f}x | "
                f"{3 * rate_1 * per:.1f} |"
            )
    print(
        "\nThe fleet's PostgreSQL backends while confirming (sampled every 20 ms): backends busy on average, by "
        "what they waited for (CPU: waiting for nothing)\n"
    )
    print("| fleet | samples | busy backends by wait event |\n|---|---:|---|")
    for trail in trails:
        for size in sizes:
            waits = PgWaits(DSN, "")
            for m in measured[trail, size]:
                waits.add(m.waits)
            print(f"| {trail}, {size} | {waits.samples} | {waits.summary()} |")
    if chaos > 0:
        await chaos_latency(chaos)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2,4", help="fleet sizes, comma-separated (default 1,2,4)")
    parser.add_argument("--taps", type=int, default=200, help="refused taps a round (default 200)")
    parser.add_argument("--runs", type=int, default=150, help="confirm-and-run taps a round (default 150)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of every size, interleaved (default 2)")
    parser.add_argument("--window", type=int, default=16, help="taps in flight at most (default 16)")
    parser.add_argument(
        "--audit-trail",
        choices=["on", "chain", "off", "both", "all"],
        default="all",
        help="the workers keep the hash-chained audit trail, each in a lane (on, the default of a deployment) "
        "or all in one chain (chain), do not (off); both: on and off; all: the three (default all)",
    )
    parser.add_argument(
        "--chaos",
        type=float,
        default=10.0,
        help="seconds of the fleet chaos run whose decision latency is printed after the table; 0 skips it "
        "(default 10)",
    )
    args = parser.parse_args()
    if args.chaos < 0:
        raise SystemExit(f"--chaos takes seconds (0 to skip the chaos run), e.g. --chaos 10; got {args.chaos}")
    try:
        chosen = [int(n) for n in args.workers.split(",") if n.strip()]
    except ValueError:
        raise SystemExit(f"--workers takes numbers separated by commas, e.g. 1,2,4; got {args.workers!r}") from None
    if not chosen or min(chosen) < 1:
        raise SystemExit(f"--workers takes sizes of at least 1, e.g. 1,2,4; got {args.workers!r}")
    trails = {"both": ["on", "off"], "all": ["on", "chain", "off"]}.get(args.audit_trail, [args.audit_trail])
    asyncio.run(main(chosen, args.taps, args.runs, args.rounds, args.window, trails, args.chaos))

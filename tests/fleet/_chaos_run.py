"""One chaos run, start to figures: the fleet, the people, the kills and the terminated connections, then the
settling and the count. Used by ``tests/fleet/test_chaos.py`` (which asserts the correctness figures) and by
``bench/fleet.py --chaos`` (which prints the decision latency, a figure of the machine it runs on)."""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

from milpa_chat.errors import StoreError
from milpa_chat.runtime.approval import FINAL
from milpa_chat.runtime.trail import AuditTrail
from milpa_chat.store import Store
from tests.store._workers import open_spec

from ._chaos import People, chaos
from ._fleet import Fleet, running_fleet
from ._records import approvals_in, settled, unconverged

SETTLE_SECONDS = 25.0


async def chaos_figures(tmp: Path, seed: int, seconds: float) -> tuple[dict[str, Any], Fleet]:
    """``seconds`` of chaos on two Telegram and two Slack workers (seeded), settled; its figures and the fleet
    (stopped by then: its logs are still on disk)."""
    async with running_fleet(tmp, telegram=2, slack=2) as fleet:
        store = open_spec(fleet.store_spec(), max_size=2)

        async def record_of(approval_id: str) -> dict[str, Any] | None:
            try:  # the chaos terminates this connection too now and then: the person looks again later
                rec = await store.get("approvals", approval_id)
            except StoreError:
                return None
            return None if rec is None else dict(rec.value)

        async def ran(approval_id: str) -> int | None:
            try:
                return sum(1 for e in await store.read("executions") if e.value.get("key") == approval_id)
            except StoreError:
                return None

        people = People(fleet, seed, record_of, ran)
        until = time.monotonic() + seconds
        try:
            await asyncio.gather(
                people.ask(until),
                people.look_and_tap(until),
                people.telegram_retries(until),
                chaos(fleet, people.rng, people.tally, until),
            )
            await settle(fleet, people, store)
            return await measure(fleet, people, store), fleet
        finally:
            await store.close()


async def settle(fleet: Fleet, people: People, store: Store) -> None:
    """Let the fleet (every worker up) and the people finish what is in flight."""
    for w in fleet.workers:
        if not w.alive:
            w.start()
    for w in fleet.workers:
        await w.ready()
    await fleet.balanced()
    deadline = time.monotonic() + SETTLE_SECONDS
    tapping = asyncio.ensure_future(people.look_and_tap(deadline))
    retrying = asyncio.ensure_future(people.telegram_retries(deadline))
    try:
        while time.monotonic() < deadline:
            await asyncio.sleep(1.0)
            approvals = await approvals_in(store)
            if (
                all(a.state in FINAL for a in approvals.values())
                and not unconverged(fleet, approvals)[0]
                and not fleet.tg.feed.pending
            ):
                break
    finally:
        tapping.cancel()
        retrying.cancel()
        await asyncio.gather(tapping, retrying, return_exceptions=True)
        await people.finish()
    # a copy whose send completed while its worker died before recording it is unknown to the record; a
    # person who taps it is refused and the copy is brought up to date
    _, stale = unconverged(fleet, await approvals_in(store))
    for card in stale:
        await people.touch(card)
    await people.finish()
    deadline = time.monotonic() + 10.0
    while stale and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        _, stale = unconverged(fleet, await approvals_in(store))


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(fleet: Fleet, people: People, store: Store) -> dict[str, Any]:
    approvals = await approvals_in(store)
    runs: dict[str, int] = {}
    for entry in await store.read("executions"):
        key = str(entry.value.get("key"))
        runs[key] = runs.get(key, 0) + 1
    executed = [a for a in approvals.values() if a.state == "executed"]
    not_once = [a.id for a in executed if runs.get(a.id, 0) != 1]
    unapproved = [
        k
        for k, n in runs.items()
        if k not in approvals or approvals[k].state in ("rejected", "cancelled", "expired", "pending") or n > 1
    ]
    wrong, stale = unconverged(fleet, approvals)
    wrong += [
        f"{c.approval_id} {c.surface} {c.chat} {c.message_id}: an unrecorded copy still offers "
        f"{sorted(c.actions)} after a tap"
        for c in stale
    ]
    t = people.tally
    latencies = [t.decided_seen[a] - t.first_tap[a] for a in t.decided_seen]
    states: dict[str, int] = {}
    for a in approvals.values():
        states[a.state] = states.get(a.state, 0) + 1
    return {
        "requests": t.requests,
        "redeliveries": t.redeliveries,
        "retries": t.retries,
        "taps": t.taps,
        "worker kills": t.kills,
        "restarts": t.restarts,
        "backends terminated": t.terminated_backends,
        "approvals": len(approvals),
        "states": dict(sorted(states.items())),
        "decisions": sum(1 for a in approvals.values() if a.state not in ("pending", "expired")),
        "executions per executed approval": sorted({runs.get(a.id, 0) for a in executed}),
        "approved runs not executed exactly once": len(not_once),
        "executions of requests not approved": len(unapproved),
        "approvals neither terminal nor visibly effect_uncertain": sum(not settled(a) for a in approvals.values()),
        "visible effect_uncertain": states.get("effect_uncertain", 0),
        "uncertain runs resolved by a person (Run again / Mark as done)": t.rescues,
        "cards not converged to their record": len(wrong),
        "unrecorded copies tapped and repaired": t.stale_copies_tapped - len(stale),
        "decisions seen on a card after a tap": len(latencies),
        "decision latency p50 (s)": round(statistics.median(latencies), 3) if latencies else float("nan"),
        "decision latency p99 (s)": round(percentile(latencies, 0.99), 3),
        "audit trail": str(await AuditTrail(store).verify()),
        "_wrong": wrong,
    }

"""Lease holders are processes (host, pid, start time): a dead one's leases and hand-offs are taken over at once,
a live one's never; a decision made where nothing runs the tool is due at once for a worker that can."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from milpa_chat import ToolContext, ToolRegistry, VerifyPolicy
from milpa_chat.runtime.approvals import ApprovalDesk
from milpa_chat.runtime.leases import HOST, holder_dead, process_start, this_holder
from milpa_chat.store import SqliteStore

CLERK = ToolContext.telegram(1, 100, ["payments:send"])
MANAGER = ToolContext.telegram(1, 200, ["payments:approve"])


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    """Another live process on this host."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def holder_of(pid: int) -> str:
    start = process_start(pid)
    assert start is not None, "this test needs /proc (Linux)"
    return f"{HOST}:{pid}:{start}"


def test_a_holder_is_dead_when_its_pid_is_gone_or_belongs_to_a_later_process(child: subprocess.Popen[bytes]) -> None:
    alive = holder_of(child.pid)
    assert not holder_dead(this_holder()) and not holder_dead(alive)
    pid, start = alive.split(":")[1:]
    boot, ticks = start.split(".")
    assert holder_dead(f"{HOST}:{pid}:{boot}.{int(ticks) - 1}")  # the pid now belongs to another process
    assert holder_dead(f"{HOST}:{os.getpid()}:{boot}.{int(ticks) - 1}")  # an earlier process that had our pid
    assert not holder_dead(f"elsewhere:{pid}:{boot}.1")  # another host: its lease just ends
    assert not holder_dead(f"{HOST}:{pid}:a1b2c3")  # an older holder name, pid alive: unsure, so alive
    child.kill()
    child.wait()
    assert holder_dead(alive)
    assert holder_dead(f"{HOST}:{child.pid}:a1b2c3")  # an older holder name whose pid is gone


def registry_on(store: SqliteStore, ran: list[str], *, follower: bool) -> ToolRegistry:
    registry = ToolRegistry(store=store)

    async def pay(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        ran.append(str(ctx.idempotency_key))
        return {"paid": args["amount"]}

    registry.register(
        "pay",
        "Pay",
        {"type": "object", "properties": {"amount": {"type": "integer"}}},
        pay,
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",)),
    )
    if follower:  # what a chat layer plugs in: run what is claimed
        desk = registry.approvals

        async def follow(change: Any) -> None:
            if change.claimed:
                async with desk.holding(change.approval):
                    await registry.run_approval(change.approval, CLERK)

        desk.follower = follow
        desk.openers.append(lambda value, ctx: value.update(auto_run=True))
    return registry


async def test_a_restart_takes_over_a_dead_processs_lease_at_once_and_never_a_live_ones(
    tmp_path: Path, child: subprocess.Popen[bytes]
) -> None:
    stores = [SqliteStore(tmp_path / "a.db") for _ in range(3)]
    ran: list[str] = []
    try:
        first = registry_on(stores[0], ran, follower=False)
        first.approvals.worker = holder_of(child.pid)  # a live worker: the child process
        ids = [(await first.call("pay", {"amount": n}, CLERK)).data["request_id"] for n in (1, 2)]
        for rid in ids:
            await ApprovalDesk(stores[1]).decide(rid, "approve", MANAGER, via="cli")
            claimed = await first.approvals.claim(rid, CLERK, tool="pay")  # the child runs it, and lives on
            assert claimed.approval.data["lease"]["holder"] == holder_of(child.pid)
        restarted = registry_on(stores[2], ran, follower=True)
        assert await restarted.approvals.recover_dead() == []  # the holder lives: its leases are its own
        assert {a.state for a in await restarted.approvals.listing()} == {"executing"}

        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        again = registry_on(stores[2], ran, follower=True)
        changes = await again.approvals.recover_dead()
        assert sorted(c.approval.id for c in changes) == sorted(ids)
        assert {a.state for a in await again.approvals.listing()} == {"effect_uncertain"}
        assert ran == []  # nothing ran twice silently: a person chooses Run again or Mark as done
    finally:
        for store in stores:
            await store.close()


async def test_a_decision_where_nothing_runs_the_tool_is_due_at_once(tmp_path: Path) -> None:
    stores = [SqliteStore(tmp_path / "a.db") for _ in range(2)]
    ran: list[str] = []
    try:
        worker = registry_on(stores[0], ran, follower=True)
        rid = (await worker.call("pay", {"amount": 5}, CLERK)).data["request_id"]
        cli = ApprovalDesk(stores[1])  # as milpa-chat approvals approve: no follower
        change = await cli.decide(rid, "approve", MANAGER, via="cli")
        assert change.approval.state == "approved" and not change.claimed
        assert change.approval.data["deliver_at"] <= stores[1].clock()  # no hand-off kept for itself
        await worker.approvals.sweep()
        await asyncio.sleep(0)
        assert ran == [rid]
        final = await worker.approvals.get(rid)
        assert final is not None and final.state == "executed"
    finally:
        for store in stores:
            await store.close()

"""Several OS processes race on one approval, on one SQLite file and on one PostgreSQL database.

Replays of a verification, confirm-token redemptions, Approve taps, typed ``/resolve_verification``
commands and sweeps, all at the same moment from different processes: each approval runs its tool
exactly once (counted in the store, across processes), and ends settled.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from milpa_chat.runtime import ToolContext
from milpa_chat.store import Store
from tests.runtime._approval_worker import APPROVERS, MANAGERS, build, clerk_context
from tests.runtime.conftest import backend_spec
from tests.store._workers import open_spec

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["sqlite", "postgres"])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    yield from backend_spec(request.param, tmp_path)


async def race(spec: dict[str, Any], approval_id: str, modes: list[str], repeats: int) -> list[list[str]]:
    """Start one process per mode; they all act at the same instant; their outcomes, in order."""
    start_at = time.time() + 4.0  # every interpreter is up and connected by then
    procs = []
    for worker, mode in enumerate(modes):
        arg = json.dumps(
            {
                "store": spec,
                "approval_id": approval_id,
                "mode": mode,
                "repeats": repeats,
                "start_at": start_at,
                "worker": worker,
            }
        )
        procs.append(
            await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "tests.runtime._approval_worker",
                arg,
                cwd=ROOT,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env={**os.environ},
            )
        )
    results = []
    for proc in procs:
        out, err = await asyncio.wait_for(proc.communicate(), 120)
        assert proc.returncode == 0, err.decode()[-3000:]
        results.append(json.loads(out.decode().strip().splitlines()[-1]))
    return results


async def runs(store: Store) -> list[dict[str, Any]]:
    return [e.value for e in await store.read("runs")]


async def test_concurrent_replays_in_four_processes_run_once(spec: dict[str, Any]) -> None:
    store = open_spec(spec)
    registry, _, _ = build(store)
    cli = ToolContext.mcp("r", "telegram:100", ["payments:send"])  # no chat route: the requester replays
    rid = (await registry.call("pay", {"to": "ACME", "amount": 3}, cli)).data["request_id"]
    await registry.verifier.grant(rid, ToolContext.mcp("r", "telegram:200", ["payments:approve"]))
    outcomes = await race(spec, rid, ["replay"] * 4, 5)
    assert sum(o == "ran" for out in outcomes for o in out) == 1
    assert await runs(store) == [{"tool": "pay", "key": rid}]
    final = await registry.approvals.get(rid)
    assert final is not None and final.state == "executed"
    await store.close()


async def test_concurrent_confirm_redemptions_in_four_processes_run_once(spec: dict[str, Any]) -> None:
    store = open_spec(spec)
    registry, assistant, _ = build(store)
    asked = await registry.call("delete_note", {"note_id": 1}, clerk_context(assistant))
    token = asked.confirm_token
    assert token is not None
    outcomes = await race(spec, token, ["confirm"] * 4, 5)
    assert sum(o == "ran" for out in outcomes for o in out) == 1
    assert await runs(store) == [{"tool": "delete_note", "key": token}]
    await store.close()


async def test_taps_typed_decisions_and_sweeps_from_four_processes_run_once(spec: dict[str, Any]) -> None:
    store = open_spec(spec)
    registry, assistant, surface = build(store)
    opened = await registry.call("pay", {"to": "ACME", "amount": 8}, clerk_context(assistant))
    rid = opened.data["request_id"]
    await assistant.open_approval(surface.inbound(MANAGERS[0], APPROVERS), "pay", opened)
    outcomes = await race(spec, rid, ["tap", "tap", "typed", "sweep"], 4)
    assert await runs(store) == [{"tool": "pay", "key": rid}]
    taps = outcomes[0] + outcomes[1]
    assert sum(t == "Approved — running it now." for t in taps) <= 1 and all(t for t in taps)
    final = await registry.approvals.get(rid)
    assert final is not None and final.state == "executed" and len(final.votes) == 1
    await store.close()

"""``ApprovalHost`` on a real SQLite file: an external record is never run by the desk, the decision is awaited
from any process (a second host re-attaches by id), concurrent runners run the call once, edits are checked
against the framework's schema, and bad input is refused with a clear message."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from milpa_chat import ToolContext, ToolRegistry
from milpa_chat.agents import ApprovalHost, approval_id
from milpa_chat.runtime.approval import ApprovalRefused
from milpa_chat.runtime.definition import VerifyPolicy
from milpa_chat.store.sqlite import SqliteStore

from .frameworks import SCHEMA

ALICE = ToolContext.web("alice", scopes=["payments:send"])
MARIA = ToolContext.web("maria", scopes=["payments:approve"])
MATEO = ToolContext.web("mateo", scopes=["payments:approve"])
MANAGERS = VerifyPolicy(approver_scopes=("payments:approve",))


async def test_a_confirmed_external_call_waits_for_its_caller_and_runs_once_under_twenty_runners(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "kit.db")
    host = ApprovalHost(ToolRegistry(store=store), poll=0.01)
    try:
        opened = await host.request("send_payment", {"to": "ACME", "amount": 120}, ALICE)
        assert opened.data["requester"]["principal"] == "alice" and opened.data["external"] is True
        change = await host.desk.decide(opened.id, "confirm", ALICE)
        assert not change.claimed and change.approval.state == "approved"  # nobody but its caller runs it
        decision = await host.wait(opened.id)
        assert decision.approved and decision.deciders == ["alice"] and decision.args["amount"] == 120
        runs: list[str | None] = []

        async def pay(args: dict[str, object]) -> str:
            runs.append(approval_id())
            await asyncio.sleep(0.05)
            return f"Paid {args['amount']} to {args['to']}"

        values = await asyncio.gather(*(host.run(opened.id, pay) for _ in range(20)))
        print(f"\n20 concurrent runners of one approved call -> {len(runs)} run(s)")
        assert runs == [opened.id] and set(values) == {"Paid 120 to ACME"}
        assert (await host.desk.get(opened.id)).state == "executed"  # type: ignore[union-attr]
    finally:
        await store.close()


async def test_a_new_process_reattaches_to_a_decision_by_id(tmp_path: Path) -> None:
    first_store = SqliteStore(tmp_path / "kit.db")
    first = ApprovalHost(ToolRegistry(store=first_store))
    opened = await first.request("send_payment", {"to": "ACME", "amount": 5}, ALICE, verify=MANAGERS)
    await first_store.close()  # the process that asked is gone

    store = SqliteStore(tmp_path / "kit.db")
    host = ApprovalHost(ToolRegistry(store=store), poll=0.01)
    try:
        waiting = asyncio.create_task(host.wait(opened.id))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        await host.desk.decide(opened.id, "reject", MARIA, note="not this month")
        decision = await waiting
        assert not decision.approved and decision.reason == "Rejected by maria: not this month."
        with pytest.raises(ApprovalRefused, match="did not run here"):
            await host.run(opened.id, lambda args: asyncio.sleep(0))
    finally:
        await store.close()


async def test_edits_are_checked_against_the_frameworks_schema_and_bad_input_is_refused(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "kit.db")
    host = ApprovalHost(ToolRegistry(store=store), poll=0.01)
    try:
        opened = await host.request(
            "send_payment", {"to": "ACME", "amount": 120}, ALICE, verify=MANAGERS, schema=SCHEMA
        )
        with pytest.raises(ApprovalRefused, match="amount: 'plenty' is not of type 'number'") as bad:
            await host.desk.amend(opened.id, {"amount": "plenty"}, MARIA)
        assert bad.value.errors == {"amount": "'plenty' is not of type 'number'"}
        await host.desk.amend(opened.id, {"amount": 80}, MARIA)
        with pytest.raises(ApprovalRefused, match="You edited this version"):
            await host.desk.decide(opened.id, "approve", MARIA)
        await host.desk.decide(opened.id, "approve", MATEO)
        decision = await host.wait(opened.id)
        assert decision.edited and decision.args == {"to": "ACME", "amount": 80} and decision.deciders == ["mateo"]
        with pytest.raises(TypeError, match="must be an object"):
            await host.request("send_payment", ["ACME", 1], ALICE)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="takes an Assistant or a ToolRegistry"):
            ApprovalHost(object())
        with pytest.raises(ApprovalRefused, match="Unknown approval"):
            await host.wait("no-such-id")
    finally:
        await store.close()

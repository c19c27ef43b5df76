"""The one Approval in the runtime: claims with a lease, dead tokens, effect_uncertain, the decision rules."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from milpa_chat import ErrorCode, ToolContext, ToolRegistry, VerifyPolicy, tool
from milpa_chat.runtime import ApprovalRefused, HumanVerifier
from milpa_chat.store import MemoryStore, SqliteStore
from milpa_chat.testing import ManualClock

CLERK = ToolContext.telegram(1, 100, ["payments:send", "notes:write"])
MANAGER = ToolContext.telegram(1, 200, ["payments:approve"])
MANAGER2 = ToolContext.telegram(1, 201, ["payments:approve"])
MANAGER3 = ToolContext.telegram(1, 202, ["payments:approve"])


class Tools:
    def __init__(self) -> None:
        self.paid: list[tuple[str, int]] = []
        self.keys: list[str | None] = []

    @tool(
        "pay",
        "Send a payment",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",), expires_in=600),
    )
    async def pay(self, to: str, amount: int, ctx: ToolContext) -> dict[str, Any]:
        self.paid.append((to, amount))
        self.keys.append(ctx.idempotency_key)
        await asyncio.sleep(0)  # let concurrent claimers interleave
        return {"paid": amount, "to": to}

    @tool(
        "big_pay",
        "Needs three approvers",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",), quorum=3),
    )
    async def big_pay(self, to: str, amount: int) -> dict[str, Any]:
        self.paid.append((to, amount))
        return {"paid": amount}

    @tool("delete_note", "Delete a note", scopes=["notes:write"], mutating=True)
    def delete_note(self, note_id: int, ctx: ToolContext) -> dict[str, Any]:
        self.keys.append(ctx.idempotency_key)
        return {"deleted": note_id}


def make(store: Any) -> tuple[ToolRegistry, Tools]:
    tools = Tools()
    registry = ToolRegistry(store=store, confirm_ttl=120, approval_lease=60)
    registry.scan(tools)
    return registry, tools


async def test_concurrent_replays_after_one_grant_run_once_on_sqlite(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "a.db")
    registry, tools = make(store)
    opened = await registry.call("pay", {"to": "ACME", "amount": 5}, CLERK)
    rid = opened.data["request_id"]
    await registry.verifier.grant(rid, MANAGER)
    runs = await asyncio.gather(*[registry.call("pay", {"verification_id": rid}, CLERK) for _ in range(10)])
    assert sum(r.success for r in runs) == 1 and tools.paid == [("ACME", 5)]
    assert {r.error for r in runs if not r.success} <= {
        "This request was already approved and is running.",
        "This request was already approved and carried out.",
    }
    assert tools.keys == [rid]  # the approval id reaches the tool as its idempotency key
    await store.close()


async def test_a_cancelled_or_expired_token_is_dead_even_when_the_clock_steps_back(clock: ManualClock) -> None:
    registry, tools = make(MemoryStore(clock=clock))
    asked = await registry.call("delete_note", {"note_id": 1}, CLERK)
    assert await registry.confirmations.cancel(asked.confirm_token or "", CLERK)
    replay = await registry.call("delete_note", {"confirm_token": asked.confirm_token}, CLERK)
    assert replay.error == "Invalid or expired confirmation token" and tools.keys == []

    asked = await registry.call("delete_note", {"note_id": 2}, CLERK)
    clock.now += 121
    assert [c.event for c in await registry.approvals.sweep()] == ["expired"]
    clock.now -= 3600  # the clock steps back: the record stays expired
    replay = await registry.call("delete_note", {"confirm_token": asked.confirm_token}, CLERK)
    assert replay.error == "Invalid or expired confirmation token" and tools.keys == []


async def test_a_token_is_redeemed_by_its_owner_for_its_tool_only(clock: ManualClock) -> None:
    registry, tools = make(MemoryStore(clock=clock))
    asked = await registry.call("delete_note", {"note_id": 3}, CLERK)
    token = asked.confirm_token
    other = ToolContext.telegram(1, 999, ["notes:write", "payments:send"])
    assert (await registry.call("delete_note", {"confirm_token": token}, other)).code == ErrorCode.VALIDATION_ERROR
    assert (await registry.call("pay", {"confirm_token": token}, CLERK)).code == ErrorCode.VALIDATION_ERROR
    done = await registry.call("delete_note", {"confirm_token": token}, CLERK)
    assert done.success and done.data == {"deleted": 3} and tools.keys == [token]
    approval = await registry.approvals.get(token)
    assert approval is not None and approval.state == "executed" and approval.data["decided_via"] == "telegram"


async def test_a_lease_that_ends_without_a_result_becomes_effect_uncertain(clock: ManualClock) -> None:
    registry, tools = make(MemoryStore(clock=clock))
    rid = (await registry.call("pay", {"to": "ACME", "amount": 7}, CLERK)).data["request_id"]
    await registry.verifier.grant(rid, MANAGER)
    claimed = (await registry.approvals.claim(rid, CLERK, tool="pay")).approval  # then the worker dies
    assert (await registry.approvals.sweep()) == []  # the lease still runs
    clock.now += 61
    (change,) = await registry.approvals.sweep()
    assert change.event == "uncertain" and change.approval.state == "effect_uncertain"
    again = await registry.call("pay", {"verification_id": rid}, CLERK)
    assert again.code == ErrorCode.FORBIDDEN and "Run again or Mark as done" in (again.error or "")
    # a result that arrives late still settles the record
    from milpa_chat import ToolResult

    settled = await registry.approvals.finish(claimed, ToolResult.success({"paid": 7}))
    assert settled.state == "executed" and tools.paid == []


async def test_an_idempotent_tool_is_retried_after_its_lease_ends(clock: ManualClock) -> None:
    registry = ToolRegistry(store=MemoryStore(clock=clock), approval_lease=60)
    runs: list[str | None] = []

    async def sync_mailbox(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        runs.append(ctx.idempotency_key)
        return {"synced": True}

    registry.register(
        "sync_mailbox",
        "Sync a mailbox",
        {"type": "object"},
        sync_mailbox,
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",)),
        idempotent=True,
    )
    rid = (await registry.call("sync_mailbox", {}, CLERK)).data["request_id"]
    await registry.verifier.grant(rid, MANAGER)
    await registry.approvals.claim(rid, CLERK, tool="sync_mailbox")
    clock.now += 61
    (change,) = await registry.approvals.sweep()
    assert change.event == "retrying" and change.approval.state == "approved" and not change.claimed
    done = await registry.call("sync_mailbox", {"verification_id": rid}, CLERK)
    assert done.success and runs == [rid]
    final = await registry.approvals.get(rid)
    assert final is not None and final.state == "executed" and final.attempt == 2 and final.data["retries"] == 1


async def test_quorum_votes_under_contention_are_each_recorded_once(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "q.db")
    registry, tools = make(store)
    assert tools.paid == []
    rid = (await registry.call("big_pay", {"to": "ACME", "amount": 9}, CLERK)).data["request_id"]
    votes = await asyncio.gather(
        *[registry.verifier.grant(rid, m) for m in (MANAGER, MANAGER2, MANAGER3)],
        *[registry.verifier.grant(rid, MANAGER) for _ in range(5)],
        return_exceptions=True,
    )
    refused = [v for v in votes if isinstance(v, ApprovalRefused)]
    assert len(refused) == 5 and all("already approved" in str(r) for r in refused)
    final = await registry.verifier.get(rid)
    assert final is not None and final.state == "approved"
    assert sorted(v["principal"] for v in final.votes) == ["telegram:200", "telegram:201", "telegram:202"]
    assert tools.paid == []  # approved, but nothing runs until the requester replays (no chat layer here)
    await store.close()


@pytest.mark.parametrize(
    ("who", "decision", "message"),
    [
        (ToolContext.telegram(1, 100, ["payments:approve"]), "approve", "four-eyes"),  # the requester, as approver
        (ToolContext.telegram(1, 300, ["notes:read"]), "approve", "needs one of these scopes: payments:approve"),
        (ToolContext(principal=None, channel="telegram", scopes=("payments:approve",)), "reject", "identified person"),
        (MANAGER, "cancel", "can withdraw this"),
        (MANAGER, "confirm", "not confirmed"),
        (MANAGER, "run_again", "waiting for a decision"),
        (MANAGER, "launch", "Unknown decision"),
    ],
)
async def test_the_decision_function_refuses_with_a_reason_and_changes_nothing(
    clock: ManualClock, who: ToolContext, decision: str, message: str
) -> None:
    registry, tools = make(MemoryStore(clock=clock))
    rid = (await registry.call("pay", {"to": "ACME", "amount": 1}, CLERK)).data["request_id"]
    before = await registry.approvals.get(rid)
    with pytest.raises(ApprovalRefused, match=message):
        await registry.approvals.decide(rid, decision, who)
    after = await registry.approvals.get(rid)
    assert before is not None and after is not None and after.version == before.version and tools.paid == []


async def test_unknown_and_overdue_requests_are_refused(clock: ManualClock) -> None:
    registry, tools = make(MemoryStore(clock=clock))
    with pytest.raises(ApprovalRefused, match="Unknown request") as unknown:
        await registry.approvals.decide("0" * 32, "approve", MANAGER)
    assert unknown.value.code == "NOT_FOUND"
    rid = (await registry.call("pay", {"to": "ACME", "amount": 1}, CLERK)).data["request_id"]
    clock.now += 601
    with pytest.raises(ApprovalRefused, match="expired") as late:
        await registry.approvals.decide(rid, "approve", MANAGER)
    assert late.value.code == "EXPIRED"
    stored = await registry.approvals.get(rid)
    assert stored is not None and stored.state == "expired" and stored.due is None and tools.paid == []


async def test_the_sweep_reads_only_what_is_due(clock: ManualClock) -> None:
    class Counting(MemoryStore):
        scans = 0

        async def scan(self, *args: Any, **kwargs: Any) -> Any:
            Counting.scans += 1
            return await super().scan(*args, **kwargs)

    registry, _ = make(Counting(clock=clock))
    ids = [(await registry.call("pay", {"to": f"P{i}", "amount": i + 1}, CLERK)).data["request_id"] for i in range(50)]
    clock.now += 31  # past the hand-off: nothing is owed without a chat layer, and nothing has expired
    assert await registry.approvals.sweep() == []
    clock.now += 600
    expired = await registry.approvals.sweep()
    assert sorted(c.approval.id for c in expired) == sorted(ids) and Counting.scans == 0


def test_a_verifier_without_a_store_keeps_requests_in_memory() -> None:
    async def run() -> str:
        verifier = HumanVerifier()
        req = await verifier.request("gate:deploy", CLERK)
        done = await verifier.grant(req.id, MANAGER)
        return done.state

    assert asyncio.run(run()) == "approved"


async def test_every_change_of_an_approval_is_audited(clock: ManualClock, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    registry, _ = make(MemoryStore(clock=clock))
    with caplog.at_level(logging.INFO, logger="milpa_chat.audit"):
        rid = (await registry.call("pay", {"to": "ACME", "amount": 2}, CLERK)).data["request_id"]
        await registry.verifier.grant(rid, MANAGER)
        await registry.approvals.claim(rid, CLERK, tool="pay")
        clock.now += 61
        await registry.approvals.sweep()
        await registry.approvals.decide(rid, "mark_done", MANAGER)
    lines = [r.getMessage() for r in caplog.records if "[ApprovalAudit]" in r.getMessage()]
    assert [line.split(" | ")[1] for line in lines] == ["requested", "approved", "claimed", "uncertain", "marked_done"]
    uncertain = next(r for r in caplog.records if "| uncertain |" in r.getMessage())
    assert uncertain.levelname == "WARNING" and "effect_uncertain" in uncertain.getMessage()
    assert "by=telegram:200" in lines[-1] and rid in lines[-1]


async def test_a_long_run_keeps_its_lease_and_is_never_taken_for_lost() -> None:
    registry = ToolRegistry(approval_lease=0.3)
    gate = asyncio.Event()

    async def slow_export(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        await gate.wait()
        return {"exported": True}

    registry.register(
        "slow_export",
        "Export everything",
        {"type": "object"},
        slow_export,
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",)),
    )
    rid = (await registry.call("slow_export", {}, CLERK)).data["request_id"]
    await registry.verifier.grant(rid, MANAGER)
    claimed = (await registry.approvals.claim(rid, CLERK, tool="slow_export")).approval

    async def run() -> Any:
        async with registry.approvals.holding(claimed):
            return await registry.run_approval(claimed, CLERK)

    running = asyncio.ensure_future(run())
    for _ in range(6):  # two leases' worth of sweeps while the tool still runs
        await asyncio.sleep(0.15)
        assert await registry.approvals.sweep() == []
    gate.set()
    assert (await running).success
    final = await registry.approvals.get(rid)
    assert final is not None and final.state == "executed" and final.attempt == 1

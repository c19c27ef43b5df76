"""Verification: request/resolve tools, decider from context, four-eyes, once-only, durable, verify= tools."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from milpa_chat import ErrorCode, ToolContext, ToolRegistry, VerifyPolicy, tool
from milpa_chat.runtime import HumanVerifier, VerificationRefused, VerificationTool
from milpa_chat.store import MemoryStore
from milpa_chat.testing import ManualClock

WORKER = ToolContext.mcp("r", "agent:worker", ["tasks:write"])
REVIEWER = ToolContext.mcp("r", "agent:reviewer", ["tasks:write", "verification:resolve"])
REVIEWER2 = ToolContext.mcp("r", "agent:reviewer2", ["verification:resolve"])


@pytest.fixture
def vreg(clock: ManualClock) -> ToolRegistry:
    reg = ToolRegistry(store=MemoryStore(clock=clock))
    VerificationTool(reg.verifier, resolve_scopes=["verification:resolve"]).register(reg)
    return reg


async def test_request_then_resolve_in_two_calls(vreg: ToolRegistry) -> None:
    events: list[str] = []
    vreg.dispatcher.subscribe("verification.requested", lambda n, p: events.append(n))
    vreg.dispatcher.subscribe("verification.granted", lambda n, p: events.append(n))
    req = await vreg.call("request_verification", {"subject": "gate:report.publish"}, WORKER)
    assert req.success and req.requires_confirmation() and "confirm_token" not in req.data
    rid = req.data["request_id"]
    assert req.data["subject"] == "gate:report.publish" and req.data["policy"] == "single"
    res = await vreg.call("resolve_verification", {"request_id": rid, "decision": "grant"}, REVIEWER)
    assert res.success and res.message == "Verification granted for 'gate:report.publish'."
    assert res.data["status"] == "passed" and res.data["principal"] == "agent:reviewer"
    assert res.meta["verification_status"] == "passed"
    assert events == ["verification.requested", "verification.granted"]


async def test_resolve_needs_the_scope_the_policy_dividend(vreg: ToolRegistry) -> None:
    rid = (await vreg.call("request_verification", {"subject": "s"}, WORKER)).data["request_id"]
    r = await vreg.call("resolve_verification", {"request_id": rid, "decision": "grant"}, WORKER)
    assert r.code == ErrorCode.FORBIDDEN
    assert r.error == (
        "Missing required scope for tool 'resolve_verification'. Need one of: verification:resolve "
        "— context has: tasks:write."
    )


async def test_principal_is_never_an_argument(vreg: ToolRegistry) -> None:
    rid = (await vreg.call("request_verification", {"subject": "s"}, WORKER)).data["request_id"]
    r = await vreg.call(
        "resolve_verification", {"request_id": rid, "decision": "grant", "principal": "agent:boss"}, REVIEWER
    )
    assert r.code == ErrorCode.VALIDATION_ERROR and "principal" in (r.error or "")


async def test_no_self_approval_by_default() -> None:
    reg = ToolRegistry()
    VerificationTool(reg.verifier).register(reg)
    me = ToolContext.mcp("r", "agent:me", ["*"])
    rid = (await reg.call("request_verification", {"subject": "s"}, me)).data["request_id"]
    r = await reg.call("resolve_verification", {"request_id": rid, "decision": "grant"}, me)
    assert r.code == ErrorCode.FORBIDDEN and "four-eyes" in (r.error or "")
    allowed = ToolRegistry()
    VerificationTool(allowed.verifier, allow_self_approval=True).register(allowed)
    rid2 = (await allowed.call("request_verification", {"subject": "s"}, me)).data["request_id"]
    assert (await allowed.call("resolve_verification", {"request_id": rid2, "decision": "grant"}, me)).success


async def test_resolved_once_and_unknown_ids(vreg: ToolRegistry) -> None:
    rid = (await vreg.call("request_verification", {"subject": "s"}, WORKER)).data["request_id"]
    assert (
        await vreg.call("resolve_verification", {"request_id": rid, "decision": "reject", "reason": "no"}, REVIEWER)
    ).data["status"] == "failed"
    again = await vreg.call("resolve_verification", {"request_id": rid, "decision": "grant"}, REVIEWER2)
    assert again.code == ErrorCode.FORBIDDEN and "already rejected by agent:reviewer" in (again.error or "")
    unknown = await vreg.call("resolve_verification", {"request_id": "nope", "decision": "grant"}, REVIEWER)
    assert unknown.code == ErrorCode.NOT_FOUND and "Unknown verification request 'nope'" in (unknown.error or "")


async def test_dual_policy_needs_two_distinct_approvers(vreg: ToolRegistry) -> None:
    rid = (await vreg.call("request_verification", {"subject": "s", "policy": "dual"}, WORKER)).data["request_id"]
    one = await vreg.call("resolve_verification", {"request_id": rid, "decision": "grant"}, REVIEWER)
    assert one.data["status"] == "pending" and "1 of 2" in (one.message or "")
    same = await vreg.call("resolve_verification", {"request_id": rid, "decision": "grant"}, REVIEWER)
    assert same.code == ErrorCode.FORBIDDEN and "already approved" in (same.error or "")
    two = await vreg.call("resolve_verification", {"request_id": rid, "decision": "grant"}, REVIEWER2)
    assert two.data["status"] == "passed"


async def test_fifty_approvers_at_once_decide_once(clock: ManualClock) -> None:
    store = MemoryStore(clock=clock)
    verifier = HumanVerifier(store)
    req = await verifier.request("s", WORKER)
    granted: list[str] = []
    verifier.dispatcher.subscribe("verification.granted", lambda n, p: granted.append(p["event"].decided_by))

    async def decide(i: int) -> str:
        ctx = ToolContext.mcp("r", f"agent:{i}", [])
        try:
            return (await (verifier.grant if i % 2 else verifier.reject)(req.id, ctx)).state
        except VerificationRefused:
            return "refused"

    outcomes = await asyncio.gather(*[decide(i) for i in range(50)])
    assert sum(o != "refused" for o in outcomes) == 1
    final = await verifier.get(req.id)
    assert final is not None and final.state in {"approved", "rejected"}
    assert len(granted) == (1 if final.state == "approved" else 0)


async def test_expiry(clock: ManualClock) -> None:
    verifier = HumanVerifier(MemoryStore(clock=clock))
    req = await verifier.request("s", WORKER, policy=VerifyPolicy(expires_in=60))
    clock.advance(61)
    with pytest.raises(VerificationRefused, match="expired"):
        await verifier.grant(req.id, REVIEWER)
    stored = await verifier.get(req.id)
    assert stored is not None and stored.state == "expired"
    other = await verifier.request("t", WORKER, policy=VerifyPolicy(expires_in=10))
    clock.advance(11)
    assert [r.id for r in await verifier.expire_overdue()] == [other.id]


class Payments:
    def __init__(self) -> None:
        self.paid: list[tuple[str, int]] = []

    @tool(
        "pay",
        "Send a payment",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",), expires_in=600),
    )
    async def pay(self, to: str, amount: int) -> dict[str, Any]:
        self.paid.append((to, amount))
        return {"paid": amount, "to": to}


async def test_verify_tool_opens_a_request_and_runs_the_approved_arguments_once(clock: ManualClock) -> None:
    payments = Payments()
    reg = ToolRegistry(store=MemoryStore(clock=clock))
    reg.scan(payments)
    clerk = ToolContext.telegram(1, 100, ["payments:send"])
    manager = ToolContext.telegram(1, 200, ["payments:approve"])
    opened = await reg.call("pay", {"to": "ACME", "amount": 50}, clerk)
    assert opened.success and opened.meta["requires_verification"] and payments.paid == []
    rid = opened.data["request_id"]
    early = await reg.call("pay", {"verification_id": rid}, clerk)
    assert early.code == ErrorCode.FORBIDDEN and "still waiting" in (early.error or "")
    with pytest.raises(VerificationRefused, match=r"four-eyes|needs one of"):
        await reg.verifier.grant(rid, clerk)
    await reg.verifier.grant(rid, manager)
    thief = await reg.call("pay", {"verification_id": rid}, manager)
    assert thief.code == ErrorCode.FORBIDDEN and "another requester" in (thief.error or "")
    runs = await asyncio.gather(*[reg.call("pay", {"verification_id": rid, "amount": 9999}, clerk) for _ in range(20)])
    assert sum(r.success for r in runs) == 1 and payments.paid == [("ACME", 50)]
    final = await reg.verifier.get(rid)
    assert final is not None and final.state == "executed" and final.value["result"]["success"] is True

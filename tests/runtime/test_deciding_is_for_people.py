"""A model-made context (``ToolContext.by_model``) never decides, redeems or edits an approval, whatever it
names: every decision of the one decision function, every reserved argument, every kind of record (confirm,
verification, a standing-grant change) -> 0 lifted, each attempt refused with a sentence and audited."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from milpa_chat import ToolContext, ToolRegistry, VerifyPolicy, tool
from milpa_chat.runtime.approval import ApprovalRefused
from milpa_chat.runtime.approvals import DECISIONS
from milpa_chat.runtime.trail import AuditTrail
from milpa_chat.store import MemoryStore, SqliteStore, Store


class Tools:
    def __init__(self) -> None:
        self.ran: list[str] = []

    @tool("drop", "Drop rows", scopes=["rows:write"], mutating=True, confirm=True)
    async def drop(self, n: int) -> dict[str, int]:
        self.ran.append(f"drop {n}")
        return {"dropped": n}

    @tool("pay", "Pay", scopes=["pay:send"], mutating=True, verify=VerifyPolicy(approver_scopes=("pay:approve",)))
    async def pay(self, amount: int) -> dict[str, int]:
        self.ran.append(f"pay {amount}")
        return {"paid": amount}


ALICE = ToolContext.telegram(chat_id=1, user_id=1, scopes=["rows:write", "pay:send", "pay:approve"])
BOSS = ToolContext.telegram(chat_id=2, user_id=2, scopes=["pay:approve"])


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: object) -> Store:
    if request.param == "memory":
        return MemoryStore()
    return SqliteStore(f"{tmp_path}/people.db")


async def test_no_model_made_decision_or_redemption_lifts_anything(store: Store) -> None:
    tools, registry = Tools(), ToolRegistry(store=store)
    registry.scan(tools)
    trail = AuditTrail(store).attach(registry)
    asked = await registry.call("drop", {"n": 1}, ALICE)
    confirm_id = str(asked.confirm_token)
    paid = await registry.call("pay", {"amount": 5}, ALICE)
    pay_id = str(paid.meta["approval_id"])
    grant = await registry.approvals.open(
        "verification",
        ALICE,
        tool=None,
        args={},
        summary="sign a grant",
        expires_in=600,
        subject="standing:sign",
        guard="standing",
        policy=VerifyPolicy(approver_scopes=("pay:approve",), four_eyes=False),
    )
    models = [ALICE.as_model(), BOSS.as_model(), ToolContext.cli().as_model(), ToolContext.mcp("r", "mcp:x").as_model()]
    lifted = attempts = 0
    for ctx, aid, decision in itertools.product(models, (confirm_id, pay_id, grant.id), DECISIONS):
        for via in (None, "telegram", "cli"):
            attempts += 1
            try:
                await registry.approvals.decide(aid, decision, ctx, via=via, note="model says yes")
                lifted += 1
            except ApprovalRefused as exc:
                assert exc.code == "FORBIDDEN" and "only a person decides it" in str(exc)
    for ctx, aid in itertools.product(models, (confirm_id, pay_id)):
        attempts += 1
        with pytest.raises(ApprovalRefused, match="A model cannot edit"):
            await registry.approvals.amend(aid, {"n": 1000}, ctx)
    replays: list[tuple[str, dict[str, Any]]] = [
        ("drop", {"confirm_token": confirm_id}),
        ("drop", {"n": 1, "confirm_token": confirm_id}),
        ("pay", {"verification_id": pay_id}),
        ("pay", {"amount": 5, "verification_id": pay_id}),
    ]
    for ctx, (name, args) in itertools.product(models, replays):
        attempts += 1
        result = await registry.call(name, args, ctx)
        lifted += result.success
        assert result.code == "FORBIDDEN" and "only a person confirms or runs an approval" in str(result.error)
    print(f"\n{attempts} model-made attempts to decide, edit or redeem -> {lifted} lifted")
    assert lifted == 0 and tools.ran == []
    for aid in (confirm_id, pay_id, grant.id):
        record = await registry.approvals.get(aid)
        assert record is not None and record.state == "pending" and record.votes == [] and record.revision == 0
    refused = [e for e in await trail.entries() if e.kind == "refused"]
    assert len(refused) == len(models) * 3 * len(DECISIONS) * 3 + len(models) * 2  # each attempt, on the trail
    assert all(e.fields["by_model"] is True for e in refused)
    # The people themselves still decide: Alice confirms her drop, the boss approves the payment.
    done = await registry.call("drop", {"confirm_token": confirm_id}, ALICE)
    assert done.success and tools.ran == ["drop 1"]
    await registry.approvals.decide(pay_id, "approve", BOSS, via="telegram")
    assert (await registry.call("pay", {"verification_id": pay_id}, ALICE)).success
    assert tools.ran == ["drop 1", "pay 5"]


async def test_a_model_context_stays_model_made_through_every_derivation() -> None:
    ctx = ToolContext.slack("T1", "U1", "C1", scopes=["a"]).as_model()
    assert ctx.by_model and ctx.as_plan().by_model and ctx.with_extra(x=1).by_model
    assert ctx.as_model() is ctx and ctx.to_dict()["by_model"] is True
    assert not ToolContext.cli().by_model


async def test_a_model_may_run_what_approvers_decided_without_naming_reserved_arguments() -> None:
    """Running an approved verification decides nothing: the requester's model may claim it (MCP's
    approval_run does), but only through the desk, never by putting verification_id in its arguments."""
    tools, registry = Tools(), ToolRegistry(store=MemoryStore())
    registry.scan(tools)
    paid = await registry.call("pay", {"amount": 7}, ALICE.as_model())
    pay_id = str(paid.meta["approval_id"])
    await registry.approvals.decide(pay_id, "approve", BOSS, via="telegram")
    change = await registry.approvals.claim(pay_id, ALICE.as_model(), tool="pay")
    result = await registry.run_approval(change.approval, ALICE.as_model())
    assert result.success and tools.ran == ["pay 7"]

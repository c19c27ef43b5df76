"""Batches and the actions around a decision on the runtime alone (no chat): each item through the one decision
function, with its own rules (high risk, quorum, four-eyes, reassignment); a question pauses expiry per policy."""

from __future__ import annotations

from typing import Any

import pytest

from milpa_chat import ToolRegistry, VerifyPolicy, tool
from milpa_chat.runtime.approval import ApprovalRefused
from milpa_chat.runtime.approval_actions import ApprovalActions, Assignee
from milpa_chat.runtime.approval_rules import risk_tier
from milpa_chat.runtime.batches import BatchDesk
from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.trail import AuditTrail
from milpa_chat.store import MemoryStore
from milpa_chat.testing import ManualClock

ASKER = ToolContext(principal="web:ana", channel="web", scopes=("notes:write",), extra={"user_name": "Ana"})
MARIA = ToolContext(principal="web:maria", channel="web", scopes=("notes:approve",), extra={"user_name": "Maria"})
LUIS = ToolContext(principal="web:luis", channel="web", scopes=("notes:approve",), extra={"user_name": "Luis"})
NEWBIE = ToolContext(principal="web:newbie", channel="web", scopes=(), extra={"user_name": "Newbie"})


class Notes:
    def __init__(self) -> None:
        self.runs: list[str] = []

    @tool(
        "delete_note",
        "Delete a note",
        scopes=["notes:write"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("notes:approve",), expires_in=600, risk="low"),
    )
    async def delete_note(self, note_id: int) -> str:
        self.runs.append(f"delete {note_id}")
        return "Deleted."

    @tool(
        "purge",
        "Delete everything",
        scopes=["notes:write"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("notes:approve",), expires_in=600, risk="high"),
    )
    async def purge(self) -> str:
        self.runs.append("purge")
        return "Purged."

    @tool(
        "archive",
        "Archive a note (two approvers)",
        scopes=["notes:write"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("notes:approve",), expires_in=600, quorum=2, risk="low"),
    )
    async def archive(self, note_id: int) -> str:
        self.runs.append(f"archive {note_id}")
        return "Archived."


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


async def setup(clock: ManualClock) -> tuple[ToolRegistry, Notes, AuditTrail]:
    registry = ToolRegistry(store=MemoryStore(clock=clock))
    notes = Notes()
    registry.scan(notes)

    def tiers(value: dict[str, Any], ctx: ToolContext) -> None:  # what a chat layer records when it opens
        definition = registry.get(value["tool"])
        assert definition is not None
        value["risk"] = risk_tier(definition, getattr(definition.verify, "risk", None))

    registry.approvals.install(opener=tiers)
    return registry, notes, AuditTrail(registry.store).attach(registry)


async def ask(registry: ToolRegistry, name: str, args: dict[str, Any], ctx: ToolContext = ASKER) -> str:
    result = await registry.call(name, args, ctx)
    approval_id = result.meta["approval_id"]
    assert isinstance(approval_id, str)
    approval = await registry.approvals.get(approval_id)
    assert approval is not None
    return approval_id


async def test_a_selection_batch_applies_each_items_own_rules(clock: ManualClock) -> None:
    registry, notes, trail = await setup(clock)
    ids = [await ask(registry, "delete_note", {"note_id": i}) for i in (1, 2)]
    ids.append(await ask(registry, "purge", {}))
    ids.append(await ask(registry, "archive", {"note_id": 9}))
    batches = BatchDesk(registry.approvals, fast_min=0)
    batch = await batches.open(ids, MARIA)
    clock.advance(60)
    _, changes, outcomes = await batches.decide(batch.id, "approve", MARIA, via="web")
    texts = {o.tool: o.text for o in outcomes}
    assert "High risk" in texts["purge"] and "1 of 2" in texts["archive"]
    assert sum(not o.refused for o in outcomes) == 3 == len(changes)  # two approved, one vote; purge left out
    # without a follower the approved items wait, approved, for a worker; nothing ran twice
    states = {(await registry.approvals.get(i)).state for i in ids[:2]}  # type: ignore[union-attr]
    assert states == {"approved"}
    purge = await registry.approvals.get(ids[2])
    assert purge is not None and purge.state == "pending"
    # a second approver completes the quorum item, from the same batch; the others are refused per item
    _, _, again = await batches.decide(batch.id, "approve", LUIS, via="web")
    assert [o.refused for o in again] == [True, True, True, False]
    assert "already approved" in again[0].text
    decided = [e for e in await trail.entries() if e.kind == "decided"]
    assert len(decided) == 4 and (await trail.verify()).ok
    assert {e.kind for e in await trail.entries()} >= {"batched", "batch_decided"}
    assert notes.runs == []


async def test_the_requester_cannot_approve_their_own_batch(clock: ManualClock) -> None:
    registry, _, _ = await setup(clock)
    both = ToolContext(principal="web:ana", channel="web", scopes=("notes:write", "notes:approve"))
    ids = [await ask(registry, "delete_note", {"note_id": i}, both) for i in (1, 2)]
    batches = BatchDesk(registry.approvals, fast_min=0)
    batch = await batches.open(ids, both)
    _, changes, outcomes = await batches.decide(batch.id, "approve", both, via="web")
    assert changes == [] and all("own request" in o.text for o in outcomes)


async def test_reassignment_is_checked_when_the_new_approver_acts(clock: ManualClock) -> None:
    registry, _, trail = await setup(clock)
    aid = await ask(registry, "delete_note", {"note_id": 1})
    actions = ApprovalActions(registry.approvals)
    with pytest.raises(ApprovalRefused, match="scopes"):
        await actions.reassign(aid, "web:maria", NEWBIE)  # only someone who may decide reassigns
    await actions.reassign(aid, Assignee(principal="web:newbie", name="Newbie"), MARIA)  # named without the scope
    with pytest.raises(ApprovalRefused, match="reassigned it to Newbie"):
        await registry.approvals.decide(aid, "approve", LUIS)
    with pytest.raises(ApprovalRefused, match="needs one of these scopes"):
        await registry.approvals.decide(aid, "approve", NEWBIE)  # checked now: Newbie has no scope
    promoted = ToolContext(principal="web:newbie", channel="web", scopes=("notes:approve",))
    change = await registry.approvals.decide(aid, "approve", promoted)
    assert change.approval.state == "approved"
    kinds = [e.kind for e in await trail.story(aid)]
    assert kinds.index("reassigned") < kinds.index("decided")


async def test_a_question_pauses_expiry_until_it_is_answered_when_the_policy_says_so(clock: ManualClock) -> None:
    registry, _, trail = await setup(clock)
    desk = registry.approvals
    aid = await ask(registry, "delete_note", {"note_id": 1})
    expires = (await desk.get(aid)).expires_at  # type: ignore[union-attr]
    actions = ApprovalActions(desk, pause_expiry=True)
    await actions.ask(aid, "which note is 1?", MARIA)
    clock.advance(900)  # past the request's own 600 s
    await desk.sweep()
    assert (await desk.get(aid)).state == "pending"  # type: ignore[union-attr]
    with pytest.raises(ApprovalRefused, match="Only Ana"):
        await actions.answer(aid, "me", MARIA)
    await actions.answer(aid, "the shopping list", ASKER)
    now = await desk.get(aid)
    assert now is not None and now.expires_at == expires + 900
    assert [n["kind"] for n in now.data["notes"]] == ["question", "answer"]
    assert now.data["notes"][0]["answer"] == "the shopping list"
    with pytest.raises(ApprovalRefused, match="Nobody asked"):
        await actions.answer(aid, "again", ASKER)
    clock.advance(601)
    await desk.sweep()
    assert (await desk.get(aid)).state == "expired"  # type: ignore[union-attr]
    assert {"asked", "answered"} <= {e.kind for e in await trail.story(aid)}

    # without the policy, the question does not stop the clock
    other = await ask(registry, "delete_note", {"note_id": 2})
    await ApprovalActions(desk).ask(other, "sure?", MARIA)
    clock.advance(601)
    await desk.sweep()
    assert (await desk.get(other)).state == "expired"  # type: ignore[union-attr]


async def test_comments_come_from_people_who_may_see_the_request(clock: ManualClock) -> None:
    registry, _, _ = await setup(clock)
    aid = await ask(registry, "delete_note", {"note_id": 1})
    actions = ApprovalActions(registry.approvals)
    await actions.comment(aid, "ok with me", LUIS)
    await actions.comment(aid, "thanks", ASKER)
    with pytest.raises(ApprovalRefused, match="not its requester or an approver"):
        await actions.comment(aid, "hello", NEWBIE)
    await actions.comment(aid, "seen in the group", NEWBIE, on_a_card=True)
    with pytest.raises(ApprovalRefused, match="empty"):
        await actions.comment(aid, "  ", LUIS)
    notes = (await registry.approvals.get(aid)).data["notes"]  # type: ignore[union-attr]
    assert [n["text"] for n in notes] == ["ok with me", "thanks", "seen in the group"]

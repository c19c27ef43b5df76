"""A decision is first tried on a read-only view of the record (no copy for a refusal); the rules still see
and write exactly what they would on a copy, and nothing a rule does can reach the record as read."""

from __future__ import annotations

from typing import Any

import pytest

from milpa_chat import ToolContext, ToolRegistry, VerifyPolicy, tool
from milpa_chat.runtime import ApprovalRefused
from milpa_chat.runtime._probe import NeedsCopy, ReadOnlyView
from milpa_chat.store import MemoryStore

CLERK = ToolContext.telegram(1, 100, ["payments:send"])
OTHER = ToolContext.telegram(1, 101, ["payments:send"])
APPROVERS = [ToolContext.telegram(1, 200 + n, ["payments:approve"]) for n in range(3)]


class Tools:
    def __init__(self) -> None:
        self.paid: list[int] = []

    @tool(
        "pay",
        "Pay, with two approvers",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",), quorum=2),
    )
    def pay(self, amount: int) -> dict[str, Any]:
        self.paid.append(amount)
        return {"paid": amount}

    @tool("delete_note", "Delete a note", scopes=["payments:send"], mutating=True)
    def delete_note(self, note_id: int) -> dict[str, Any]:
        return {"deleted": note_id}


def test_the_view_refuses_every_write_and_every_nested_value() -> None:
    record = {"state": "pending", "votes": [{"principal": "a"}], "policy": {"quorum": 2}, "n": 3, "none": None}
    view = ReadOnlyView(record)
    assert (view["state"], view.get("n"), view.get("none", "x"), view.get("absent", 7)) == ("pending", 3, None, 7)
    assert "votes" in view and "absent" not in view
    attempts = [
        lambda: view["votes"],
        lambda: view.get("policy"),
        lambda: view.__setitem__("state", "approved"),
        lambda: view.update(state="approved"),
        lambda: view.setdefault("x", 1),
        lambda: view.pop("state"),
        lambda: view.__delitem__("n"),
        lambda: list(view),
        lambda: len(view),
        lambda: view.items(),
    ]
    for attempt in attempts:
        with pytest.raises(NeedsCopy):
            attempt()
    assert record == {"state": "pending", "votes": [{"principal": "a"}], "policy": {"quorum": 2}, "n": 3, "none": None}
    assert not issubclass(NeedsCopy, Exception)  # a rule's `except Exception` cannot swallow it


async def test_refusals_leave_the_record_as_it_was_and_votes_accumulate_on_copies() -> None:
    store = MemoryStore()
    tools = Tools()
    registry = ToolRegistry(store=store)
    registry.scan(tools)
    desk = registry.approvals
    opened = await registry.call("pay", {"amount": 5}, CLERK)
    rid = opened.data["request_id"]
    before = await store.get("approvals", rid)
    assert before is not None

    with pytest.raises(ApprovalRefused, match=r"own request|four-eyes|scopes"):
        await desk.decide(rid, "approve", CLERK, via="telegram")
    after = await store.get("approvals", rid)
    assert after is not None and (after.version, after.value) == (before.version, before.value)

    first = await desk.decide(rid, "approve", APPROVERS[0], via="telegram")  # a nested list grows (votes)
    assert first.event == "voted" and [v["principal"] for v in first.approval.votes] == [APPROVERS[0].principal]
    with pytest.raises(ApprovalRefused):  # the same approver again: refused on the view, nothing written
        await desk.decide(rid, "approve", APPROVERS[0], via="telegram")
    second = await desk.decide(rid, "approve", APPROVERS[1], via="telegram")
    assert second.approval.state in ("approved", "executing", "executed")
    assert [v["principal"] for v in second.approval.votes] == [a.principal for a in APPROVERS[:2]]
    settled = await store.get("approvals", rid)
    assert settled is not None
    with pytest.raises(ApprovalRefused, match=r"[Aa]lready|approved|done"):  # a tap on the decided card
        await desk.decide(rid, "approve", APPROVERS[2], via="telegram")
    unchanged = await store.get("approvals", rid)
    assert unchanged is not None and (unchanged.version, unchanged.value) == (settled.version, settled.value)


async def test_a_confirm_refused_to_someone_else_then_taken_by_the_requester() -> None:
    registry = ToolRegistry(store=MemoryStore())
    registry.scan(Tools())
    opened = await registry.call("delete_note", {"note_id": 3}, CLERK)
    token = opened.confirm_token or ""
    with pytest.raises(ApprovalRefused, match="Only"):
        await registry.approvals.decide(token, "confirm", OTHER, via="telegram")
    change = await registry.approvals.decide(token, "confirm", CLERK, via="telegram", follow=False)
    assert change.claimed and change.approval.state == "executing"
    assert change.approval.data["decided_by"] == CLERK.principal

"""A decision runs on a copy-on-read draft of the record (no deep copy for a refusal); the rules still see
and write exactly what they would on a copy, and nothing a rule does can reach the record as read."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from milpa_chat import ToolContext, ToolRegistry, VerifyPolicy, tool
from milpa_chat.runtime import ApprovalRefused
from milpa_chat.runtime._probe import Draft
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


def _record() -> dict[str, Any]:
    return {
        "state": "pending",
        "votes": [{"principal": "a"}],
        "policy": {"quorum": 2, "scopes": ["x"]},
        "cards": [{"shown": "k", "edits": 1}],
        "pair": (1, {"x": [2]}),
        "n": 3,
        "none": None,
    }


def test_nothing_done_to_a_draft_reaches_the_record_as_read() -> None:
    record = _record()
    attempts: list[Any] = [
        lambda d: d["votes"].append({"principal": "b"}),
        lambda d: d.get("policy").update(quorum=3),
        lambda d: d.get("policy")["scopes"].append("y"),
        lambda d: d.setdefault("cards", []).append({}),
        lambda d: d["cards"][0].update(shown="other"),
        lambda d: d.pop("votes").clear(),
        lambda d: [c.clear() for c in d.values() if isinstance(c, dict | list)],
        lambda d: [c.clear() for _, c in d.items() if isinstance(c, dict | list)],
        lambda d: {**d}["policy"].clear(),
        lambda d: dict(d)["cards"].clear(),
        lambda d: d.copy()["votes"].clear(),
        lambda d: (d | {"n": 4})["policy"].clear(),
        lambda d: copy.copy(d)["cards"][0].clear(),
        lambda d: copy.deepcopy(d)["cards"][0].clear(),
        lambda d: d["pair"][1]["x"].append(3),
        lambda d: d.popitem()[1],
        lambda d: d.update(state="approved", votes=[]),
        lambda d: d.__delitem__("n"),
        lambda d: d.clear(),
    ]
    for attempt in attempts:
        draft = Draft(record)
        attempt(draft)
        assert record == _record(), attempt
    draft = Draft(record)
    assert draft == record and draft.plain() == record and type(draft.plain()) is dict
    assert (draft["state"], draft.get("n"), draft.get("none", "x"), draft.get("absent", 7)) == ("pending", 3, None, 7)
    assert json.loads(json.dumps(draft)) == json.loads(json.dumps(record))


def test_a_draft_copies_what_is_read_and_shares_the_rest() -> None:
    record = _record()
    draft = Draft(record)
    draft["cards"][0]["shown"] = "new"
    draft["state"] = "approved"
    plain = draft.plain()
    assert plain["cards"] == [{"shown": "new", "edits": 1}] and record["cards"] == [{"shown": "k", "edits": 1}]
    assert plain["policy"] is record["policy"] and plain["votes"] is record["votes"]  # never read: shared
    assert draft["cards"] is plain["cards"]  # read once, kept: a second read sees the first one's changes
    assert not isinstance(draft.pop("absent", None), dict) and draft.get("absent") is None
    with pytest.raises(KeyError):
        draft.pop("absent")


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

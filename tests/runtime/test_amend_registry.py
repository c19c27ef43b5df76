"""A registry alone (the CLI, MCP, a notebook without an assistant) can edit a pending request: the edit is
re-validated with the tool's schema and clamps and re-authorized for the requester, as a new call would be."""

from __future__ import annotations

from typing import Annotated, Any

import pytest

from milpa_chat import Param, ToolContext, ToolRegistry, VerifyPolicy, tool
from milpa_chat.runtime.approval import ApprovalRefused
from milpa_chat.store import MemoryStore


class Pay:
    def __init__(self) -> None:
        self.paid: list[float] = []

    @tool(
        "pay",
        "Pay",
        scopes=["pay"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("pay:approve",), expires_in=600),
    )
    async def pay(self, amount: Annotated[float, Param("How much", clamp=(1, 1000))]) -> dict[str, Any]:
        self.paid.append(amount)
        return {"paid": amount}


async def test_an_edit_through_the_registry_alone_is_checked_and_runs_the_edited_version() -> None:
    tools = Pay()
    registry = ToolRegistry(store=MemoryStore())
    registry.scan(tools)
    asker = ToolContext.mcp("req", "agent:ana", ["pay"])
    approver = ToolContext.mcp("req2", "agent:bob", ["pay:approve"])
    other = ToolContext.mcp("req3", "agent:cy", ["pay:approve"])
    asked = await registry.call("pay", {"amount": 120}, asker)
    aid = asked.meta["approval_id"]
    with pytest.raises(ApprovalRefused) as bad:
        await registry.approvals.amend(aid, {"amount": "lots"}, approver, via="mcp")
    assert bad.value.code == "VALIDATION_ERROR"
    change = await registry.approvals.amend(aid, {"amount": 5000}, approver, via="mcp")
    assert change.approval.args["amount"] == 1000  # clamped, as a new call would be
    with pytest.raises(ApprovalRefused):  # the editor is the author of this version: four-eyes
        await registry.approvals.decide(aid, "approve", approver, via="mcp")
    decided = await registry.approvals.decide(aid, "approve", other, via="mcp")
    assert decided.approval.state == "approved" and decided.approval.args == {"amount": 1000}

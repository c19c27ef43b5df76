"""LangChain's ``create_agent`` with its ``HumanInTheLoopMiddleware``, without a chat: each of the middleware's action
requests (per call, and batched) becomes a kit approval, an edit reaches it as its edit decision and runs once with
the edited arguments, an edit of a tool that takes none is not run, and a configuration that leaves a person no way
to say no is refused with a clear message."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from milpa_chat import ToolContext, ToolRegistry
from milpa_chat.agents import ApprovalHost
from milpa_chat.runtime.approval import ApprovalRefused
from milpa_chat.runtime.definition import VerifyPolicy
from milpa_chat.store import MemoryStore

from .frameworks import SCHEMA, Ledger, scripted_chat_model

ALICE = ToolContext.web("alice", scopes=["payments:send"])
MARIA = ToolContext.web("maria", scopes=["payments:approve"])
MATEO = ToolContext.web("mateo", scopes=["payments:approve"])
MANAGERS = VerifyPolicy(approver_scopes=("payments:approve",))


def agent_with(ledger: Ledger, seen: list[str], interrupt_on: dict[str, Any], mode: str) -> Any:
    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    @tool
    def send_payment(to: str, amount: float) -> str:
        """Send a payment."""
        return ledger.pay(to, amount)

    return create_agent(
        scripted_chat_model(seen),
        tools=[send_payment],
        middleware=[HumanInTheLoopMiddleware(interrupt_on, interrupt_mode=mode)],  # type: ignore[arg-type]
        checkpointer=InMemorySaver(),
    )


async def pending(host: ApprovalHost) -> Any:
    for _ in range(500):
        found = await host.desk.listing(state="pending")
        if found:
            return found[0]
        await asyncio.sleep(0.01)
    raise TimeoutError("no approval was opened")


@pytest.mark.parametrize("mode", ["per_call", "batched"])
async def test_an_edited_action_request_runs_once_with_the_edited_arguments(mode: str) -> None:
    from milpa_chat.agents.langgraph import LangGraphApprovals

    ledger, seen = Ledger(), list[str]()
    host = ApprovalHost(ToolRegistry(store=MemoryStore()), poll=0.01)
    agent = agent_with(ledger, seen, {"send_payment": True}, mode)
    approvals = LangGraphApprovals(host, agent, verify=MANAGERS, schemas={"send_payment": SCHEMA})
    run = asyncio.create_task(
        approvals.run(
            {"messages": [{"role": "user", "content": "pay ACME"}]}, ALICE, config={"configurable": {"thread_id": "t"}}
        )
    )
    approval = await pending(host)
    assert approval.tool == "send_payment" and approval.args == {"to": "ACME", "amount": 120}
    await host.desk.amend(approval.id, {"amount": 80}, MARIA)
    await host.desk.decide(approval.id, "approve", MATEO)
    state = await run
    assert [p[:2] for p in ledger.paid] == [("ACME", 80.0)] and ledger.paid[0][2] == approval.id
    assert "Paid 80.00 EUR to ACME." in state["messages"][-1].content
    assert "a human reviewer replaced this tool call" in seen[0]  # the middleware's own edit notice
    done = await host.desk.get(approval.id)
    assert done is not None and done.state == "executed"


async def test_a_tool_that_takes_no_edits_cannot_be_edited_and_runs_as_asked() -> None:
    from milpa_chat.agents.langgraph import LangGraphApprovals

    ledger, seen = Ledger(), list[str]()
    host = ApprovalHost(ToolRegistry(store=MemoryStore()), poll=0.01)
    only = {"send_payment": {"allowed_decisions": ["approve", "reject"]}}
    approvals = LangGraphApprovals(host, agent_with(ledger, seen, only, "batched"), verify=MANAGERS)
    run = asyncio.create_task(
        approvals.run(
            {"messages": [{"role": "user", "content": "pay"}]}, ALICE, config={"configurable": {"thread_id": "t"}}
        )
    )
    approval = await pending(host)
    with pytest.raises(ApprovalRefused, match="The agent that asked takes no edits of send_payment"):
        await host.desk.amend(approval.id, {"amount": 1}, MARIA)
    await host.desk.decide(approval.id, "approve", MATEO)
    state = await run
    assert [p[:2] for p in ledger.paid] == [("ACME", 120.0)]  # as asked: nobody could change it
    assert "Paid 120.00 EUR to ACME." in state["messages"][-1].content


def test_an_edited_approval_of_a_tool_that_takes_no_edits_reaches_the_middleware_as_a_rejection() -> None:
    from milpa_chat.agents.host import Decision
    from milpa_chat.agents.langgraph import hitl_decision
    from milpa_chat.runtime.approval import Approval

    edited = Decision(Approval("a1", {"state": "approved", "tool": "send_payment", "revision": 1, "args": {}}, 1))
    assert hitl_decision(edited, ["approve", "edit", "reject"])["type"] == "edit"
    refused = hitl_decision(edited, ["approve", "reject"])
    assert refused["type"] == "reject" and "send_payment takes no edits here: nothing was done" in refused["message"]


async def test_a_middleware_that_allows_no_rejection_is_refused_with_the_fix() -> None:
    from milpa_chat.agents.langgraph import LangGraphApprovals

    host = ApprovalHost(ToolRegistry(store=MemoryStore()), poll=0.01)
    only = {"send_payment": {"allowed_decisions": ["approve"]}}
    approvals = LangGraphApprovals(host, agent_with(Ledger(), [], only, "batched"))
    with pytest.raises(ValueError, match="kit approvals need 'reject' among them"):
        await approvals.run(
            {"messages": [{"role": "user", "content": "pay"}]}, ALICE, config={"configurable": {"thread_id": "t"}}
        )
    assert await host.desk.listing() == []

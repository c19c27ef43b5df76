"""What an approval of a LangGraph or LangChain agent records as its result (the trail, the card's "Done" line,
``milpa-chat approvals show``): the approved tool's own value, never a summary of the graph's state. For LangChain's
``HumanInTheLoopMiddleware``: each approved call's own ``ToolMessage`` (two calls of one model turn, each its own
value and its own approval id as idempotency key; an edited call's without the middleware's notice; a tool that
failed is a failed record). For a plain
``interrupt()`` node: what the node passed to ``record_result``."""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest

from milpa_chat import ToolContext, ToolRegistry
from milpa_chat.agents import ApprovalHost
from milpa_chat.runtime.definition import VerifyPolicy
from milpa_chat.store import MemoryStore

from .frameworks import SCHEMA, Ledger, pending, recorded

ALICE = ToolContext.web("alice", scopes=["payments:send"])
MARIA = ToolContext.web("maria", scopes=["payments:approve"])
MATEO = ToolContext.web("mateo", scopes=["payments:approve"])
MANAGERS = VerifyPolicy(approver_scopes=("payments:approve",))
CONFIG = {"configurable": {"thread_id": "t"}}


def two_payments_model() -> Any:
    """A chat model whose first turn asks for two payments at once, then answers without the tools' words."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class TwoPayments(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "two-payments"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            if isinstance(messages[-1], ToolMessage):
                reply = AIMessage(content="All settled.")
            else:
                calls = [
                    {"name": "send_payment", "args": {"to": "ACME", "amount": 120}, "id": "call_acme"},
                    {"name": "send_payment", "args": {"to": "Globex", "amount": 50}, "id": "call_globex"},
                ]
                reply = AIMessage(content="", tool_calls=calls)
            return ChatResult(generations=[ChatGeneration(message=reply)])

    return TwoPayments()


def payments_agent(ledger: Ledger, mode: str, *, fail_for: str | None = None, coroutine: bool = False) -> Any:
    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langchain_core.tools import StructuredTool, ToolException
    from langgraph.checkpoint.memory import InMemorySaver

    def pay(to: str, amount: float) -> str:
        if to == fail_for:
            raise ToolException(f"the bank refused the payment to {to}")
        return ledger.pay(to, amount)

    async def pay_async(to: str, amount: float) -> str:
        return pay(to, amount)

    send_payment = StructuredTool.from_function(
        func=pay,
        coroutine=pay_async if coroutine else None,  # an async tool runs on the event loop, a plain one in a thread
        name="send_payment",
        description="Send a payment.",
        handle_tool_error=True,  # the model is told of the failure (a ToolMessage with status "error")
    )

    return create_agent(
        two_payments_model(),
        tools=[send_payment],
        middleware=[HumanInTheLoopMiddleware({"send_payment": True}, interrupt_mode=mode)],  # type: ignore[arg-type]
        checkpointer=InMemorySaver(),
    )


@pytest.mark.parametrize("coroutine", [False, True], ids=["def", "async-def"])
@pytest.mark.parametrize("mode", ["batched", "per_call"])
async def test_each_approved_call_of_a_model_turn_records_its_own_tool_value(mode: str, coroutine: bool) -> None:
    from milpa_chat.agents.langgraph import LangGraphApprovals

    ledger = Ledger()
    host = ApprovalHost(ToolRegistry(store=MemoryStore()), poll=0.01)
    approvals = LangGraphApprovals(
        host, payments_agent(ledger, mode, coroutine=coroutine), verify=MANAGERS, schemas={"send_payment": SCHEMA}
    )
    run = asyncio.create_task(
        approvals.run({"messages": [{"role": "user", "content": "pay both"}]}, ALICE, config=CONFIG)
    )
    acme, globex = await pending(host, 2)
    await host.desk.amend(globex.id, {"amount": 40}, MARIA)  # Maria edits one of the two before Mateo approves
    for approval in (acme, globex):
        await host.desk.decide(approval.id, "approve", MATEO)
    state = await run
    assert state["messages"][-1].content == "All settled."  # the model's answer names neither payment
    assert sorted(p[:2] for p in ledger.paid) == [("ACME", 120.0), ("Globex", 40.0)]
    # each payment ran with its own approval id as idempotency key (both ran in one resume of the graph)
    assert {to: key for to, _, key in ledger.paid} == {"ACME": acme.id, "Globex": globex.id}
    acme, globex = await recorded(host, acme), await recorded(host, globex)
    assert (acme.state, acme.data["outcome"]) == ("executed", "Paid 120.00 EUR to ACME.")
    assert (globex.state, globex.data["outcome"]) == ("executed", "Paid 40.00 EUR to Globex.")  # no edit notice
    assert globex.data["result"]["data"] == "Paid 40.00 EUR to Globex."


async def test_a_call_whose_tool_failed_is_recorded_as_failed_and_the_other_as_paid() -> None:
    from milpa_chat.agents.langgraph import LangGraphApprovals

    ledger = Ledger()
    host = ApprovalHost(ToolRegistry(store=MemoryStore()), poll=0.01)
    approvals = LangGraphApprovals(host, payments_agent(ledger, "batched", fail_for="Globex"), verify=MANAGERS)
    run = asyncio.create_task(
        approvals.run({"messages": [{"role": "user", "content": "pay both"}]}, ALICE, config=CONFIG)
    )
    acme, globex = await pending(host, 2)
    for approval in (acme, globex):
        await host.desk.decide(approval.id, "approve", MATEO)
    await run
    acme, globex = await recorded(host, acme), await recorded(host, globex)
    assert (acme.state, acme.data["outcome"]) == ("executed", "Paid 120.00 EUR to ACME.")
    assert globex.state == "failed" and "the bank refused the payment to Globex" in globex.data["outcome"]
    assert [p[:2] for p in ledger.paid] == [("ACME", 120.0)]


class PaymentState(TypedDict, total=False):
    request: str
    result: str


def interrupt_graph(ledger: Ledger, *, record: bool) -> Any:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    from milpa_chat.agents.langgraph import record_result

    async def pay(state: PaymentState) -> PaymentState:
        answer = interrupt({"tool": "send_payment", "args": {"to": "ACME", "amount": 45}})
        if answer["type"] == "reject":
            return {"result": answer["message"]}
        paid = ledger.pay(**answer["args"])
        if record:
            paid = record_result(answer, paid)
        return {"result": f"All done, see you soon ({len(ledger.paid)} payment)."}

    builder = StateGraph(PaymentState)
    builder.add_node("pay", pay)
    builder.add_edge(START, "pay")
    builder.add_edge("pay", END)
    return builder.compile(checkpointer=InMemorySaver())


@pytest.mark.parametrize("record", [True, False])
async def test_an_interrupt_node_records_what_it_passed_to_record_result(record: bool) -> None:
    from milpa_chat.agents.langgraph import LangGraphApprovals

    ledger = Ledger()
    host = ApprovalHost(ToolRegistry(store=MemoryStore()), poll=0.01)
    approvals = LangGraphApprovals(host, interrupt_graph(ledger, record=record), verify=MANAGERS)
    run = asyncio.create_task(approvals.run({"request": "pay"}, ALICE, config=CONFIG))
    (approval,) = await pending(host, 1)
    await host.desk.decide(approval.id, "approve", MARIA)
    state = await run
    assert state["result"] == "All done, see you soon (1 payment)."
    done = await recorded(host, approval)
    # with record_result: the tool's own value; without it: the final state's answer, as documented
    expected = "Paid 45.00 EUR to ACME." if record else state["result"]
    assert (done.state, done.data["outcome"]) == ("executed", expected)


def test_record_result_outside_a_kit_resume_only_returns_the_value() -> None:
    from milpa_chat.agents.langgraph import record_result

    assert record_result({"type": "approve", "approval_id": "a1"}, 42) == 42

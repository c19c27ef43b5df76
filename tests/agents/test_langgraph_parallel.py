"""Parallel ``interrupt()`` nodes of one LangGraph graph (two branches, each asking for its own payment) resumed
together once people decided: inside each node ``approval_id()`` is that node's own approval id (the idempotency
key of its payment), each record gets its node's own result and is claimed once, also when two workers resume the
same paused run at the same time. The graph keeps its thread in LangGraph's SQLite checkpointer."""

from __future__ import annotations

import asyncio
import operator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from milpa_chat import ToolContext, ToolRegistry
from milpa_chat.agents import ApprovalHost, approval_id
from milpa_chat.runtime.definition import VerifyPolicy
from milpa_chat.store import MemoryStore

from .frameworks import SCHEMA, pending, recorded

ALICE = ToolContext.web("alice", scopes=["payments:send"])
MARIA = ToolContext.web("maria", scopes=["payments:approve"])
MATEO = ToolContext.web("mateo", scopes=["payments:approve"])
MANAGERS = VerifyPolicy(approver_scopes=("payments:approve",))
CONFIG = {"configurable": {"thread_id": "two-payments"}}
PAYMENTS = {"acme": {"to": "ACME", "amount": 120}, "globex": {"to": "Globex", "amount": 50}}


class State(TypedDict, total=False):
    request: str
    done: Annotated[list[str], operator.add]


class Seen:
    """What each node saw when it ran after its interrupt: ``(to, amount, answer's approval id, approval_id())``."""

    def __init__(self) -> None:
        self.paid: list[tuple[str, float, str, str | None]] = []
        self.refused: list[tuple[str, str | None]] = []
        self.after: list[str | None] = []  # approval_id() in the node that runs after both


async def two_payments_graph(stack: AsyncExitStack, db: Path, seen: Seen, *, coroutine: bool) -> Any:
    """START fans out to two nodes, each of which asks for its own payment with ``interrupt()``; a third node
    runs after both."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    from milpa_chat.agents.langgraph import record_result

    def payer(name: str) -> Any:
        def pay(state: State) -> State:
            answer = interrupt({"tool": "send_payment", "args": PAYMENTS[name]})
            if answer["type"] == "reject":
                seen.refused.append((name, approval_id()))
                return {"done": [answer["message"]]}
            args = answer["args"]
            seen.paid.append((args["to"], float(args["amount"]), answer["approval_id"], approval_id()))
            paid = record_result(answer, f"Paid {float(args['amount']):.2f} EUR to {args['to']}.")
            return {"done": [paid]}

        async def pay_async(state: State) -> State:
            return pay(state)

        return pay_async if coroutine else pay  # an async node runs on the event loop, a plain one in a thread

    def settle(state: State) -> State:
        seen.after.append(approval_id())
        return {}

    builder = StateGraph(State)
    for name in PAYMENTS:
        builder.add_node(name, payer(name))
        builder.add_edge(START, name)
    builder.add_node("settle", settle)
    builder.add_edge(list(PAYMENTS), "settle")
    builder.add_edge("settle", END)
    saver = await stack.enter_async_context(AsyncSqliteSaver.from_conn_string(str(db)))
    return builder.compile(checkpointer=saver)


@pytest.mark.parametrize("coroutine", [False, True], ids=["def", "async-def"])
async def test_each_parallel_interrupt_node_runs_with_its_own_approval_id(tmp_path: Path, coroutine: bool) -> None:
    from milpa_chat.agents.langgraph import LangGraphApprovals

    seen = Seen()
    host = ApprovalHost(ToolRegistry(store=MemoryStore()), poll=0.01)
    async with AsyncExitStack() as stack:
        graph = await two_payments_graph(stack, tmp_path / "graph.db", seen, coroutine=coroutine)
        approvals = LangGraphApprovals(host, graph, verify=MANAGERS, schemas={"send_payment": SCHEMA})
        run = asyncio.create_task(approvals.run({"request": "pay both"}, ALICE, config=CONFIG))
        acme, globex = await pending(host, 2)
        await host.desk.amend(globex.id, {"to": "Globex", "amount": 40}, MARIA)  # Maria edits one of the two
        for approval in (acme, globex):
            await host.desk.decide(approval.id, "approve", MATEO)
        state = await run
    assert sorted(state["done"]) == ["Paid 120.00 EUR to ACME.", "Paid 40.00 EUR to Globex."]
    # both nodes ran in one resume of the graph; each saw its own approval id as the idempotency key
    assert sorted(seen.paid) == [
        ("ACME", 120.0, acme.id, acme.id),
        ("Globex", 40.0, globex.id, globex.id),
    ]
    assert seen.after == [None]  # the node after both runs neither approved call: it has no approval id
    acme, globex = await recorded(host, acme), await recorded(host, globex)
    assert (acme.state, acme.data["outcome"], acme.attempt) == ("executed", "Paid 120.00 EUR to ACME.", 1)
    assert (globex.state, globex.data["outcome"], globex.attempt) == ("executed", "Paid 40.00 EUR to Globex.", 1)


async def test_a_rejected_branch_has_no_approval_id_and_the_approved_one_has_its_own(tmp_path: Path) -> None:
    from milpa_chat.agents.langgraph import LangGraphApprovals

    seen = Seen()
    host = ApprovalHost(ToolRegistry(store=MemoryStore()), poll=0.01)
    async with AsyncExitStack() as stack:
        graph = await two_payments_graph(stack, tmp_path / "graph.db", seen, coroutine=True)
        approvals = LangGraphApprovals(host, graph, verify=MANAGERS)
        run = asyncio.create_task(approvals.run({"request": "pay both"}, ALICE, config=CONFIG))
        acme, globex = await pending(host, 2)
        await host.desk.decide(acme.id, "reject", MARIA, note="not this month")
        await host.desk.decide(globex.id, "approve", MATEO)
        state = await run
    assert sorted(state["done"]) == ["Paid 50.00 EUR to Globex.", "Rejected by maria: not this month."]
    assert seen.paid == [("Globex", 50.0, globex.id, globex.id)]
    assert seen.refused == [("acme", None)]  # nothing ran under the rejected approval, nor under Globex's
    assert seen.after == [globex.id]  # the one approved call of the resume
    acme, globex = await recorded(host, acme), await recorded(host, globex)
    assert (acme.state, acme.attempt) == ("rejected", 0)
    assert (globex.state, globex.data["outcome"], globex.attempt) == ("executed", "Paid 50.00 EUR to Globex.", 1)


async def test_two_workers_resuming_the_same_paused_run_pay_each_branch_once(tmp_path: Path) -> None:
    """The process that asked is gone; two workers (their own graph objects and checkpointer connections on the
    same database) resume the paused run at the same time: each payment runs once, under its own approval id."""
    from milpa_chat.agents.langgraph import LangGraphApprovals

    seen = Seen()
    store = MemoryStore()
    db = tmp_path / "graph.db"
    first = ApprovalHost(ToolRegistry(store=store), poll=0.01)
    async with AsyncExitStack() as stack:
        graph = await two_payments_graph(stack, db, seen, coroutine=True)
        run = asyncio.create_task(
            LangGraphApprovals(first, graph, verify=MANAGERS).run({"request": "pay both"}, ALICE, config=CONFIG)
        )
        acme, globex = await pending(first, 2)
        run.cancel()  # the asking process stops while people decide
        with pytest.raises(asyncio.CancelledError):
            await run
    await first.desk.decide(acme.id, "approve", MARIA)
    await first.desk.decide(globex.id, "approve", MATEO)

    async with AsyncExitStack() as stack:
        workers = []
        for _ in range(2):
            host = ApprovalHost(ToolRegistry(store=store), poll=0.01)
            graph = await two_payments_graph(stack, db, seen, coroutine=True)
            workers.append(LangGraphApprovals(host, graph, verify=MANAGERS))
        finals = await asyncio.gather(*(w.resume_pending() for w in workers))
    assert [sorted(s["done"]) for (s,) in finals] == [["Paid 120.00 EUR to ACME.", "Paid 50.00 EUR to Globex."]] * 2
    assert sorted(seen.paid) == [("ACME", 120.0, acme.id, acme.id), ("Globex", 50.0, globex.id, globex.id)]
    assert seen.after == [None]  # the graph went on once: the other worker read the state it left
    acme, globex = await recorded(first, acme), await recorded(first, globex)
    assert (acme.state, acme.data["outcome"], acme.attempt) == ("executed", "Paid 120.00 EUR to ACME.", 1)
    assert (globex.state, globex.data["outcome"], globex.attempt) == ("executed", "Paid 50.00 EUR to Globex.", 1)
    assert await first.pending_runs("langgraph:graph") == []


async def test_parallel_interrupt_nodes_inside_a_subgraph_each_run_with_their_own_approval_id(tmp_path: Path) -> None:
    """The two paying nodes are a subgraph's, itself a node of the graph next to a third paying node."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    from milpa_chat.agents.langgraph import LangGraphApprovals, record_result

    seen = Seen()

    def payer(to: str, amount: int) -> Any:
        async def pay(state: State) -> State:
            answer = interrupt({"tool": "send_payment", "args": {"to": to, "amount": amount}})
            seen.paid.append((to, float(answer["args"]["amount"]), answer["approval_id"], approval_id()))
            return {"done": [record_result(answer, f"Paid {to}.")]}

        return pay

    inner = StateGraph(State)
    for to, amount in (("ACME", 120), ("Globex", 50)):
        inner.add_node(to, payer(to, amount))
        inner.add_edge(START, to)
        inner.add_edge(to, END)
    outer = StateGraph(State)
    outer.add_node("suppliers", inner.compile())
    outer.add_node("initech", payer("Initech", 30))
    for name in ("suppliers", "initech"):
        outer.add_edge(START, name)
        outer.add_edge(name, END)
    host = ApprovalHost(ToolRegistry(store=MemoryStore()), poll=0.01)
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "graph.db")) as saver:
        approvals = LangGraphApprovals(host, outer.compile(checkpointer=saver), verify=MANAGERS)
        run = asyncio.create_task(approvals.run({"request": "pay all three"}, ALICE, config=CONFIG))
        asked = await pending(host, 3)
        for approval in asked:
            await host.desk.decide(approval.id, "approve", MARIA)
        state = await run
    assert sorted(state["done"]) == ["Paid ACME.", "Paid Globex.", "Paid Initech."]
    assert sorted(seen.paid) == [(str(a.args["to"]), float(a.args["amount"]), a.id, a.id) for a in asked]
    for approval in asked:
        done = await recorded(host, approval)
        assert (done.state, done.data["outcome"], done.attempt) == ("executed", f"Paid {approval.args['to']}.", 1)


class Payee(TypedDict):
    to: str
    amount: int


async def test_one_node_sent_to_each_payee_runs_each_with_its_own_approval_id(tmp_path: Path) -> None:
    """LangGraph's map step: ``Send`` runs the same paying node once per payee, each asking for its own payment."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send, interrupt

    from milpa_chat.agents.langgraph import LangGraphApprovals, record_result

    seen = Seen()

    async def pay(state: Payee) -> State:  # what Send carries to this node
        answer = interrupt({"tool": "send_payment", "args": dict(state)})
        seen.paid.append((state["to"], float(answer["args"]["amount"]), answer["approval_id"], approval_id()))
        return {"done": [record_result(answer, f"Paid {state['to']}.")]}

    def each_payee(state: State) -> list[Any]:  # LangGraph reads this hint: a module-level type
        return [Send("pay", Payee(to=to, amount=amount)) for to, amount in (("ACME", 120), ("Globex", 50))]

    builder = StateGraph(State)
    builder.add_node("pay", pay, input_schema=Payee)
    builder.add_conditional_edges(START, each_payee)
    builder.add_edge("pay", END)
    host = ApprovalHost(ToolRegistry(store=MemoryStore()), poll=0.01)
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "graph.db")) as saver:
        approvals = LangGraphApprovals(host, builder.compile(checkpointer=saver), verify=MANAGERS)
        run = asyncio.create_task(approvals.run({"request": "pay both"}, ALICE, config=CONFIG))
        asked = await pending(host, 2)
        for approval in asked:
            await host.desk.decide(approval.id, "approve", MARIA)
        state = await run
    assert sorted(state["done"]) == ["Paid ACME.", "Paid Globex."]
    assert sorted(seen.paid) == [(str(a.args["to"]), float(a.args["amount"]), a.id, a.id) for a in asked]
    for approval in asked:
        done = await recorded(host, approval)
        assert (done.state, done.data["outcome"], done.attempt) == ("executed", f"Paid {approval.args['to']}.", 1)

"""LangGraph with its PostgreSQL checkpointer and the kit's PostgreSQL store (the server at 127.0.0.1:5432): a graph
paused on a tool interrupt is abandoned by its worker; another worker, with its own connections, resumes the
thread once a manager approved, and the tool runs once with the approved arguments."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from typing import Any, TypedDict

import pytest

from milpa_chat import ToolContext, ToolRegistry
from milpa_chat.agents import ApprovalHost, approval_id
from milpa_chat.runtime.definition import VerifyPolicy
from tests.conftest import POSTGRES_DSN, REQUIRE_POSTGRES

pytestmark = pytest.mark.postgres
ALICE = ToolContext.web("alice", scopes=["payments:send"])
MARIA = ToolContext.web("maria", scopes=["payments:approve"])


@pytest.fixture
def schema() -> Iterator[str]:
    """A fresh schema on the test server (dropped afterwards) for the kit's tables and LangGraph's."""
    try:
        import psycopg

        name = f"milpa_lg_{secrets.token_hex(5)}"
        with psycopg.connect(POSTGRES_DSN, connect_timeout=3, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{name}"')
    except Exception as exc:
        if REQUIRE_POSTGRES:
            pytest.fail(f"PostgreSQL at {POSTGRES_DSN} is unreachable ({exc}); MILPA_REQUIRE_POSTGRES=1 requires it")
        pytest.skip(f"PostgreSQL at {POSTGRES_DSN} is unreachable ({type(exc).__name__})")
    yield name
    with psycopg.connect(POSTGRES_DSN, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


class State(TypedDict, total=False):
    request: str
    result: str


def build(saver: Any, paid: list[tuple[Any, ...]]) -> Any:
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    async def pay(state: State) -> State:
        answer = interrupt({"tool": "send_payment", "args": {"to": "ACME", "amount": 75}})
        if answer["type"] == "reject":
            return {"result": answer["message"]}
        paid.append((answer["args"]["to"], answer["args"]["amount"], approval_id()))
        return {"result": "paid"}

    builder = StateGraph(State)
    builder.add_node("pay", pay)
    builder.add_edge(START, "pay")
    builder.add_edge("pay", END)
    return builder.compile(checkpointer=saver)


async def test_another_worker_resumes_the_thread_from_postgres_and_the_tool_runs_once(schema: str) -> None:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    from milpa_chat.agents.langgraph import LangGraphApprovals
    from milpa_chat.store.postgres import PostgresStore

    dsn = f"{POSTGRES_DSN}?options=-csearch_path%3D{schema}"
    paid: list[tuple[Any, ...]] = []
    policy = VerifyPolicy(approver_scopes=("payments:approve",))
    first_store = PostgresStore(POSTGRES_DSN, schema=schema)
    async with AsyncPostgresSaver.from_conn_string(dsn) as saver:
        await saver.setup()
        host = ApprovalHost(ToolRegistry(store=first_store), poll=0.02)
        first = LangGraphApprovals(host, build(saver, paid), verify=policy)
        run = asyncio.create_task(first.run({"request": "pay"}, ALICE, config={"configurable": {"thread_id": "t-1"}}))
        for _ in range(500):  # until the paused run is kept in the store
            if await host.pending_runs(first.framework):
                break
            await asyncio.sleep(0.02)
        run.cancel()  # the first worker is gone before anyone decided
    await first_store.close()

    store = PostgresStore(POSTGRES_DSN, schema=schema)
    try:
        async with AsyncPostgresSaver.from_conn_string(dsn) as saver:
            host = ApprovalHost(ToolRegistry(store=store), poll=0.02)
            second = LangGraphApprovals(host, build(saver, paid), verify=policy)
            (approval,) = await host.desk.listing(state="pending")
            resumed = asyncio.create_task(second.resume_pending())
            await host.desk.decide(approval.id, "approve", MARIA)
            (state,) = await resumed
            print(f"\nLangGraph on PostgreSQL, resumed by another worker -> {len(paid)} run(s)")
            assert state["result"] == "paid" and paid == [("ACME", 75, approval.id)]
            assert (await host.desk.get(approval.id)).state == "executed"  # type: ignore[union-attr]
            assert await host.pending_runs(second.framework) == []
    finally:
        await store.close()

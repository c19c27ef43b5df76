"""The OpenAI Agents SDK lets a reviewer "always approve" a tool for the rest of a run. Kit approvals never grant
that on a person's behalf: each call the model makes is its own approval, decided by a person, so a second call of
the same tool in the same run waits for its own decision (and a rejection of it stops only that call)."""

from __future__ import annotations

import asyncio
from typing import Any

from milpa_chat import ToolContext, ToolRegistry
from milpa_chat.agents import ApprovalHost
from milpa_chat.runtime.definition import VerifyPolicy
from milpa_chat.store import MemoryStore
from milpa_chat.testing.llm import FakeOpenAIServer

from .frameworks import Ledger

ALICE = ToolContext.web("alice", scopes=["payments:send"])
MARIA = ToolContext.web("maria", scopes=["payments:approve"])


async def next_pending(host: ApprovalHost, seen: set[str]) -> Any:
    for _ in range(1000):
        for approval in await host.desk.listing(state="pending"):
            if approval.id not in seen:
                seen.add(approval.id)
                return approval
        await asyncio.sleep(0.01)
    raise TimeoutError("no new approval was opened")


async def test_a_second_call_of_an_approved_tool_in_the_same_run_asks_again() -> None:
    from agents import Agent, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    from milpa_chat.agents.openai_agents import OpenAIAgentsApprovals

    set_tracing_disabled(True)
    ledger = Ledger()
    host = ApprovalHost(ToolRegistry(store=MemoryStore()), poll=0.01)
    async with FakeOpenAIServer() as llm:
        llm.reply_tool_call("send_payment", {"to": "ACME", "amount": 10}, id="call_1")
        llm.reply_tool_call("send_payment", {"to": "ACME", "amount": 20}, id="call_2").reply_text("Done.")

        def send_payment(to: str, amount: float) -> str:
            """Send a payment."""
            return ledger.pay(to, amount)

        agent = Agent(
            name="payer",
            tools=[function_tool(send_payment, needs_approval=True)],
            model=OpenAIChatCompletionsModel(
                model="gpt-test", openai_client=AsyncOpenAI(base_url=llm.base_url, api_key=llm.api_key, max_retries=0)
            ),
        )
        approvals = OpenAIAgentsApprovals(host, agent, verify=VerifyPolicy(approver_scopes=("payments:approve",)))
        run = asyncio.create_task(approvals.run("pay ACME twice", ALICE))
        seen: set[str] = set()
        first = await next_pending(host, seen)
        await host.desk.decide(first.id, "approve", MARIA)
        second = await next_pending(host, seen)  # the same tool, the same run: asked again, not "always approved"
        assert second.args == {"to": "ACME", "amount": 20} and [p[:2] for p in ledger.paid] == [("ACME", 10.0)]
        await host.desk.decide(second.id, "reject", MARIA, note="one is enough")
        result = await run
        sent = [str(m["content"]) for m in llm.bodies[-1]["messages"] if m.get("role") == "tool"]
    assert result.final_output == "Done." and [p[:2] for p in ledger.paid] == [("ACME", 10.0)]
    assert any("Rejected by maria: one is enough." in s for s in sent), sent

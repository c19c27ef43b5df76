"""What standing grants never do for an agent: the model drafts, signs, lifts or suspends nothing; a grant for one
person lends nothing to another; a suspended grant stops the call with the judge's sentence, which the framework
gets as its own denial; a grant that changed between judging and lending is judged again; concurrent lent calls
each run once and the use count says how many ran. On the real frameworks (pydantic-ai with a scripted model, the
OpenAI Agents SDK against the kit's local OpenAI server, a LangGraph graph, LangChain's ``create_agent``)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from milpa_chat import ToolContext, ToolRegistry
from milpa_chat.agents import ApprovalHost, approval_id
from milpa_chat.grants import GrantDesk
from milpa_chat.runtime.approval import ApprovalRefused
from milpa_chat.runtime.trail import AuditTrail
from milpa_chat.runtime.verification_tool import VerificationTool
from milpa_chat.store import MemoryStore

from .frameworks import FRAMEWORKS, PAYMENT, Ledger
from .payees import grant, install, measured

ALICE = ToolContext.web("alice", scopes=["payments:send"])
BRUNO = ToolContext.web("bruno", scopes=["payments:send"])
MARIA = ToolContext.web("maria", scopes=["payments:approve", "grants:sign"])
MATEO = ToolContext.web("mateo", scopes=["payments:approve", "grants:sign"])


@dataclass
class Kit:
    registry: ToolRegistry
    host: ApprovalHost
    desk: GrantDesk
    trail: AuditTrail
    ledger: Ledger


@asynccontextmanager
async def kit() -> AsyncIterator[Kit]:
    registry = ToolRegistry(store=MemoryStore())
    trail = AuditTrail(registry.store).attach(registry)
    desk = install(registry)
    VerificationTool(registry.verifier, approver_scopes=("payments:approve",)).register(registry)
    await measured(registry, "ACME")
    yield Kit(registry, ApprovalHost(registry, poll=0.01), desk, trail, Ledger())


async def payments(k: Kit) -> list[Any]:
    """The records of the agent's payments (the grant's own changes are approvals too)."""
    return [r for r in await k.host.desk.listing() if r.tool == "send_payment"]


async def signed(desk: GrantDesk, seat: str = "alice") -> str:
    record, signature = await desk.draft(grant(seat), MARIA, via="cli")
    done, _ = await desk.decide(signature.id, "approve", MATEO, via="cli")
    assert done is not None and done.state == "in_force"
    return record.id


def pay(ledger: Ledger) -> Any:
    async def run(args: dict[str, Any]) -> str:
        await asyncio.sleep(0.01)
        return ledger.pay(args["to"], args["amount"])

    return run


async def ask(k: Kit, framework: str, stack: AsyncExitStack, tmp_path: Path, ctx: ToolContext) -> Any:
    """One run of ``framework``'s payment agent for ``ctx`` (its model proposes the payment once)."""
    driver = FRAMEWORKS[framework]()
    approvals, _ = await driver.build(k.host, k.ledger, None, stack, tmp_path)
    await run_once(approvals, framework, ctx)
    return driver


async def run_once(approvals: Any, framework: str, ctx: ToolContext) -> None:
    """One run, on a thread of its own, of the payment agent ``approvals`` wraps."""
    if framework in ("pydantic-ai", "openai-agents"):
        await approvals.run("please pay ACME 120 EUR", ctx)
        return
    thread = {"configurable": {"thread_id": secrets.token_hex(8)}}
    start = {"request": "pay"} if framework == "langgraph" else {"messages": [{"role": "user", "content": "pay"}]}
    await approvals.run(start, ctx, config=thread)


async def test_the_model_drafts_signs_lifts_and_suspends_nothing() -> None:
    async with kit() as k:
        refused = 0
        for ctx in (ALICE.as_model(), MARIA.as_model()):  # the requester's model, and even a signer's
            with pytest.raises(ApprovalRefused, match="A model cannot draft a standing grant"):
                await k.desk.draft(grant("alice"), ctx, via="telegram")
            refused += 1
        asked = await k.host.request("send_payment", PAYMENT, ALICE)  # Alice confirms it herself
        with pytest.raises(ApprovalRefused, match="A model cannot draft"):
            await k.desk.draft_from(asked.id, ALICE.as_model(), via="telegram")
        refused += 1
        assert await k.desk.listing() == []

        _, signature = await k.desk.draft(grant("alice"), MARIA, via="cli")  # a person drafts
        with pytest.raises(ApprovalRefused, match="A model cannot approve"):
            await k.desk.decide(signature.id, "approve", MATEO.as_model(), via="cli")
        refused += 1
        tool = await k.registry.call(
            "resolve_verification", {"request_id": signature.id, "decision": "grant"}, MATEO.as_model()
        )
        refused += not tool.success
        assert (await k.desk.get("acme-payments")).state == "draft"  # type: ignore[union-attr]
        await k.desk.decide(signature.id, "approve", MATEO, via="cli")  # a person signs
        for verb in ("suspend", "revoke"):
            with pytest.raises(ApprovalRefused, match=f"A model cannot {verb}"):
                await k.desk.request(verb, "acme-payments", MARIA.as_model(), via="cli")
            refused += 1
        await k.desk.request("suspend", "acme-payments", MARIA, via="cli", note="checking a report")
        with pytest.raises(ApprovalRefused, match="A model cannot lift"):
            await k.desk.request("lift", "acme-payments", MATEO.as_model(), via="cli")
        refused += 1
        record = await k.desk.get("acme-payments")
        print(f"\n{refused} attempts by models to draft, sign, suspend, revoke or lift -> 0 changes")
        assert refused == 8 and record is not None and record.state == "suspended" and not record.pending
        assert [h["by"] for h in record.data["history"]] == ["mateo", "maria"]


async def test_a_grant_for_alice_lends_nothing_to_bruno_nor_to_another_payee() -> None:
    async with kit() as k:
        await signed(k.desk, "alice")
        for ctx, args in ((BRUNO, PAYMENT), (ALICE, {"to": "Globex", "amount": 120})):
            asked = await k.host.request("send_payment", args, ctx)
            assert asked.state == "pending" and "standing" not in asked.data  # a card, as if no grant existed
        lent = await k.host.request("send_payment", PAYMENT, ALICE)
        assert lent.state == "approved" and lent.data["standing"]["grant"] == "acme-payments"
        assert (await k.desk.get("acme-payments")).uses == 1  # type: ignore[union-attr]


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
async def test_a_suspended_grant_stops_the_call_with_its_sentence_as_the_frameworks_denial(
    framework: str, tmp_path: Path
) -> None:
    async with kit() as k, AsyncExitStack() as stack:
        grant_id = await signed(k.desk)
        await k.desk.request("suspend", grant_id, MARIA, via="cli", note="a fraud report is being checked")
        driver = await ask(k, framework, stack, tmp_path, ALICE)
        (record,) = await payments(k)
        sentence = record.data["standing"]["sentence"]
        assert "is suspended: a fraud report is being checked" in sentence and "lifts the suspension" in sentence
        assert record.state == "rejected" and record.data["decided_by"] == f"grant:{grant_id}"
        assert any(sentence in seen for seen in driver.seen), driver.seen  # the framework's own denial, verbatim
        assert k.ledger.paid == [] and (await k.desk.get(grant_id)).uses == 0  # type: ignore[union-attr]
        story = await k.trail.story(record.id)
        assert [e.kind for e in story] == ["requested", "decided"] and story[1].fields["decision"] == "stopped"


async def test_a_grant_suspended_between_judging_and_lending_is_judged_again_and_stops() -> None:
    async with kit() as k:
        grant_id = await signed(k.desk)
        judge = k.desk.judge
        judged: list[bool] = []

        async def judge_then_a_person_suspends(*args: Any, **kwargs: Any) -> Any:
            answer = await judge(*args, **kwargs)
            judged.append(answer.verdict is not None and answer.verdict.passes())
            if len(judged) == 1:  # the grant changes after this verdict, before the use is counted
                await k.desk.request("suspend", grant_id, MARIA, via="cli", note="stop")
            return answer

        k.desk.judge = judge_then_a_person_suspends  # type: ignore[method-assign]
        asked = await k.host.request("send_payment", PAYMENT, ALICE)
        assert judged == [True, False]  # the pass was not acted on: the changed grant was judged again
        assert asked.state == "rejected" and "is suspended: stop" in (await k.host.wait(asked.id)).reason
        assert (await k.desk.get(grant_id)).uses == 0  # type: ignore[union-attr]


async def test_a_use_counted_between_judging_and_lending_is_judged_again_and_lent() -> None:
    async with kit() as k:
        grant_id = await signed(k.desk)
        judge = k.desk.judge
        calls: list[str] = []

        async def judge_while_another_call_is_lent(*args: Any, **kwargs: Any) -> Any:
            answer = await judge(*args, **kwargs)
            calls.append("judged")
            if len(calls) == 1:
                k.desk.judge = judge  # type: ignore[method-assign]
                assert (await k.host.request("send_payment", PAYMENT, ALICE)).state == "approved"
            return answer

        k.desk.judge = judge_while_another_call_is_lent  # type: ignore[method-assign]
        asked = await k.host.request("send_payment", PAYMENT, ALICE)
        assert asked.state == "approved" and (await k.desk.get(grant_id)).uses == 2  # type: ignore[union-attr]


@pytest.mark.parametrize("through", ["host", "pydantic-ai", "langgraph"])
async def test_twenty_concurrent_lent_calls_each_run_once_and_the_use_count_adds_up(
    through: str, tmp_path: Path
) -> None:
    async with kit() as k, AsyncExitStack() as stack:
        grant_id = await signed(k.desk)
        if through == "host":

            async def one() -> None:
                asked = await k.host.request("send_payment", PAYMENT, ALICE)
                assert (await k.host.wait(asked.id)).approved
                runner = pay(k.ledger)
                await asyncio.gather(k.host.run(asked.id, runner), k.host.run(asked.id, runner))  # two runners

            await asyncio.gather(*(one() for _ in range(20)))
        else:  # one app: one agent (and one checkpointer), twenty runs of it at once
            approvals, _ = await FRAMEWORKS[through]().build(k.host, k.ledger, None, stack, tmp_path)
            await asyncio.gather(*(run_once(approvals, through, ALICE) for _ in range(20)))
        records = await payments(k)
        uses = (await k.desk.get(grant_id)).uses  # type: ignore[union-attr]
        started = [e for e in await k.trail.entries() if e.kind == "started"]
        print(
            f"\n{through}: 20 concurrent lent calls -> {len(k.ledger.paid)} runs, {uses} uses, {len(records)} records"
        )
        assert len(k.ledger.paid) == 20 and uses == 20 and len(records) == 20
        assert {p[2] for p in k.ledger.paid} == {r.id for r in records}  # one run per record, each its own key
        assert {r.state for r in records} == {"executed"} and all(r.data["standing"]["lent"] for r in records)
        assert sorted(e.subject for e in started) == sorted(r.id for r in records)
        assert not await k.host.desk.listing(state="pending")
        assert (await k.trail.verify()).ok


async def test_the_openai_agents_sdk_never_remembers_always_approve_a_grant_lends_each_call_anew(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, RunState, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    from milpa_chat.agents.openai_agents import OpenAIAgentsApprovals
    from milpa_chat.testing.llm import FakeOpenAIServer

    approved_always: list[bool] = []
    sdk_approve = RunState.approve

    def approve(self: Any, item: Any, always_approve: bool = False) -> None:
        approved_always.append(always_approve)
        sdk_approve(self, item, always_approve=always_approve)

    monkeypatch.setattr(RunState, "approve", approve)
    set_tracing_disabled(True)
    async with kit() as k, FakeOpenAIServer() as llm:
        llm.reply_tool_call("send_payment", {"to": "ACME", "amount": 10}, id="call_1")
        llm.reply_tool_call("send_payment", {"to": "ACME", "amount": 20}, id="call_2")
        llm.reply_tool_call("send_payment", {"to": "ACME", "amount": 30}, id="call_3").reply_text("Done.")
        ran: list[str | None] = []

        def send_payment(to: str, amount: float) -> str:
            """Send a payment."""
            ran.append(approval_id())
            return k.ledger.pay(to, amount)

        client = AsyncOpenAI(base_url=llm.base_url, api_key=llm.api_key, max_retries=0)
        agent = Agent(
            name="payer",
            tools=[function_tool(send_payment, needs_approval=True)],
            model=OpenAIChatCompletionsModel(model="gpt-test", openai_client=client),
        )
        run = asyncio.create_task(OpenAIAgentsApprovals(k.host, agent).run("pay ACME three times", ALICE))
        first = await next_pending(k.host)
        # "Always allow…" on the first call's card: a draft, signed by another person — never the SDK's memory
        record, signature = await k.desk.draft_from(first.id, ALICE, via="telegram")
        await k.desk.decide(signature.id, "approve", MATEO, via="telegram")
        await k.host.desk.decide(first.id, "confirm", ALICE)
        result = await run
    records = await payments(k)
    lent = [r for r in records if r.data.get("standing")]
    assert result.final_output == "Done." and [p[1] for p in k.ledger.paid] == [10.0, 20.0, 30.0]
    assert len(records) == 3 and len(lent) == 2  # the second and third calls went through the kit, lent
    assert ran == [r.id for r in sorted(records, key=lambda r: r.data["created_at"])]  # each ran once, its own key
    assert approved_always == [False, False, False]  # the SDK was never told "always approve"
    assert (await k.desk.get(record.id)).uses == 2  # type: ignore[union-attr]


async def next_pending(host: ApprovalHost) -> Any:
    for _ in range(1000):
        pending = await host.desk.listing(state="pending")
        if pending:
            return pending[0]
        await asyncio.sleep(0.01)
    raise TimeoutError("no approval was opened")

"""The runtime's seams as protocols, each with a second implementation plugged in."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from milpa_chat import DeclarationError, ErrorCode, ToolContext, ToolRegistry, VerifyPolicy, tool
from milpa_chat.gateway.mcp_client import McpClientService
from milpa_chat.gateway.orchestrator import AgentOrchestrator, ChatModel
from milpa_chat.runtime import (
    HumanVerifier,
    ToolDefinition,
    ToolProvider,
    VerificationRequest,
    VerificationResult,
    Verifier,
)
from milpa_chat.runtime.declare import definition_from_schema
from milpa_chat.store import MemoryStore


class Payments:
    def __init__(self) -> None:
        self.paid: list[float] = []

    @tool("pay", "Pay an amount", mutating=True, verify=VerifyPolicy(approver_scopes=("pay:approve",)))
    async def pay(self, amount: float) -> dict[str, Any]:
        self.paid.append(amount)
        return {"paid": amount}


class AmountRule:
    """A second verifier: small payments pass at once, large ones fail, odd ones wait for a person."""

    name = "amount_rule"

    def __init__(self) -> None:
        self.asked: list[tuple[str, dict[str, Any], str | None]] = []

    async def verify(self, request: VerificationRequest, ctx: ToolContext) -> VerificationResult:
        self.asked.append((request.tool.name, dict(request.args), ctx.principal))
        amount = request.args["amount"]
        if amount < 100:
            return VerificationResult.passed(self.name, principal="rule:amount")
        if amount == 500:
            return VerificationResult.pending(self.name, "ext-42", expires_at="2030-01-01T00:00:00+00:00")
        return VerificationResult.failed(f"payments over 100 need the finance team (asked: {amount})", self.name)


def test_the_human_verifier_and_the_rule_are_verifiers() -> None:
    assert isinstance(HumanVerifier(), Verifier) and isinstance(AmountRule(), Verifier)
    assert not isinstance(object(), Verifier)


async def test_the_human_verifier_answers_pending_with_the_request_people_decide() -> None:
    registry = ToolRegistry(store=MemoryStore())
    registry.scan(Payments())
    definition = registry.get("pay")
    assert definition is not None and registry.tool_verifier is registry.verifier
    answer = await registry.verifier.verify(
        VerificationRequest(definition, {"amount": 5.0}, "pay(amount=5.0)"), ToolContext.cli()
    )
    assert answer.status == "pending" and answer.verifier == "human_verifier" and not answer.is_satisfied
    approval = await registry.verifier.get(answer.request_id)
    assert approval is not None and approval.state == "pending" and approval.args == {"amount": 5.0}
    assert answer.to_dict()["status"] == "pending" and answer.to_dict()["missing"] == []


async def test_a_second_verifier_decides_through_the_verify_gate() -> None:
    payments, rule = Payments(), AmountRule()
    registry = ToolRegistry(store=MemoryStore(), verifier=rule)
    registry.scan(payments)
    small = await registry.call("pay", {"amount": 20})
    large = await registry.call("pay", {"amount": 900})
    waiting = await registry.call("pay", {"amount": 500})
    assert small.success and small.data == {"paid": 20.0}
    assert large.code == ErrorCode.FORBIDDEN and "finance team" in (large.error or "")
    assert large.meta["verification"]["verifier"] == "amount_rule"
    assert waiting.success and waiting.data["requires_verification"] and waiting.data["request_id"] == "ext-42"
    assert payments.paid == [20.0] and [a[1] for a in rule.asked] == [
        {"amount": 20.0},
        {"amount": 900.0},
        {"amount": 500.0},
    ]
    assert await registry.approvals.listing() == []  # the rule opened no human approval
    plan = await registry.call("pay", {"amount": 20}, ToolContext.cli(mode="plan"))
    assert plan.success and len(rule.asked) == 3  # plan mode stops before the verify gate


class RemoteCatalogue:
    """A second tool provider: definitions from somewhere other than ``@tool`` (a database, a remote list)."""

    def __init__(self, rows: Sequence[Mapping[str, Any]]) -> None:
        self.rows = rows

    @staticmethod
    def _answer(name: str) -> Callable[[dict[str, Any], ToolContext], dict[str, Any]]:
        return lambda args, ctx: {"tool": name, "args": args}

    def tool_definitions(self) -> list[ToolDefinition]:
        return [
            definition_from_schema(
                row["name"],
                row["description"],
                row["schema"],
                self._answer(row["name"]),
            )
            for row in self.rows
        ]


async def test_scan_registers_what_a_tool_provider_returns() -> None:
    rows = [
        {
            "name": "lookup",
            "description": "Look up a word",
            "schema": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
        },
        {"name": "ping", "description": "Ping", "schema": {"type": "object"}},
    ]
    catalogue = RemoteCatalogue(rows)
    assert isinstance(catalogue, ToolProvider)
    registry = ToolRegistry(store=MemoryStore())
    assert registry.scan(catalogue) == 2 and [t.name for t in registry] == ["lookup", "ping"]
    result = await registry.call("lookup", {"word": "milpa"})
    assert result.success and result.data == {"tool": "lookup", "args": {"word": "milpa"}}
    assert (await registry.call("lookup", {})).code == ErrorCode.VALIDATION_ERROR


def test_a_provider_that_returns_something_else_is_a_declaration_error() -> None:
    class Broken:
        def tool_definitions(self) -> list[Any]:
            return [{"name": "x"}]

    with pytest.raises(DeclarationError, match=r"Broken.tool_definitions\(\) returned dict, not a ToolDefinition"):
        ToolRegistry().scan(Broken())


class ScriptedModel:
    """A second chat model: answers from a script, asking for one tool call first."""

    def __init__(self) -> None:
        self.seen_tools: list[list[str]] = []

    async def generate(
        self,
        messages: str | Sequence[Mapping[str, Any]],
        tools: Any = None,
        max_tokens: int = 4096,
        *,
        observer: Any = None,
    ) -> Mapping[str, Any]:
        self.seen_tools.append([t["name"] for t in tools or []])
        history = list(messages) if not isinstance(messages, str) else []
        results = [m for m in history if m.get("role") == "tool"]
        if not results:
            call = {
                "id": "c1",
                "type": "function",
                "function": {"name": "add", "arguments": json.dumps({"a": 2, "b": 3})},
            }
            return {"role": "assistant", "content": None, "tool_calls": [call]}
        return {"role": "assistant", "content": f"The sum is {json.loads(results[-1]['content'])['data']}."}


@tool("add", "Add two numbers", mutating=False)
def add(a: int, b: int) -> int:
    return a + b


async def test_the_orchestrator_runs_on_any_chat_model() -> None:
    model = ScriptedModel()
    assert isinstance(model, ChatModel)
    registry = ToolRegistry(store=MemoryStore())
    registry.scan(add)
    run = await AgentOrchestrator(model, McpClientService(registry)).run("What is 2 + 3?")
    assert run.status == "answered" and run.answer == "The sum is 5." and model.seen_tools[0] == ["add"]

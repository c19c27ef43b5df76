"""The pipeline is an ordered list of steps with one signature, visible in one place; verdicts are a type."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from milpa_chat import ErrorCode, ToolContext, ToolRegistry, ToolResult, tool
from milpa_chat.runtime import STEPS, Call, PolicyGate, PolicyRule, Verdict
from milpa_chat.runtime.pipeline import Outcome
from milpa_chat.store import MemoryStore

from .conftest import NoteTools


def test_the_order_of_the_pipeline_is_the_order_of_the_seed() -> None:
    assert [s.__name__ for s in STEPS] == [
        "resolve",
        "limits",
        "replay_lookup",
        "validate",
        "authorize",
        "rate_limit",
        "plan",
        "replay_run",
        "verify_gate",
        "confirm_gate",
        "execute",
    ]
    assert list(ToolRegistry().steps) == list(STEPS)


async def test_a_host_step_runs_in_its_place_and_can_answer_for_the_tool(notes: NoteTools) -> None:
    registry = ToolRegistry(store=MemoryStore())
    registry.scan(notes)
    seen: list[tuple[str, Any]] = []

    def business_hours(call: Call) -> Outcome:
        seen.append((call.tool.name, call.validated.wire))
        if call.validated.wire.get("page") == 13:
            return ToolResult.blocked("Page 13 is closed outside business hours.")
        return None

    registry.steps.insert(registry.steps.index(STEPS[-1]), business_hours)
    ok = await registry.call("list_notes", {"page": 2})
    closed = await registry.call("list_notes", {"page": 13})
    invalid = await registry.call("list_notes", {"page": "x"})
    assert ok.success and invalid.code == ErrorCode.VALIDATION_ERROR
    assert closed.success is False and "Page 13" in (closed.error or "")
    assert seen == [("list_notes", {"page": 2}), ("list_notes", {"page": 13})]  # after validate, never for invalid


async def test_an_async_step_is_awaited(notes: NoteTools) -> None:
    registry = ToolRegistry(store=MemoryStore())
    registry.scan(notes)

    async def deny_all(call: Call) -> ToolResult | None:
        return call.fail(ErrorCode.FORBIDDEN, "closed for maintenance")

    registry.steps.insert(1, deny_all)
    result = await registry.call("list_notes", {})
    assert result.code == ErrorCode.FORBIDDEN and result.error == "closed for maintenance" and notes.threads == []


async def test_plan_mode_stops_after_authorize_and_the_rate_limit(notes: NoteTools) -> None:
    registry = ToolRegistry(store=MemoryStore())
    registry.scan(notes)
    result = await registry.call("delete_note", {"note_id": 1}, ToolContext.cli(mode="plan"))
    assert result.success and result.data["plan"]["requires_confirmation"] is True and notes.deleted == []


class Rules:
    def __init__(self, rule: PolicyRule | None) -> None:
        self.rule = rule

    async def find_matching_rule(
        self, channel: str, principal: str | None, tool: str, mutating: bool
    ) -> PolicyRule | None:
        return self.rule


@tool("wipe", "Wipe everything", mutating=True)
def wipe() -> str:
    return "wiped"


async def test_a_verdict_says_whether_and_which_check_decided() -> None:
    [definition] = _definitions(wipe)
    anonymous = ToolContext(principal=None, channel="mcp")
    agent = ToolContext.mcp("r", "agent:a", [])
    gate = PolicyGate()
    assert await gate.judge(agent, definition) == Verdict(True, "", "policy")
    denied = await gate.judge(anonymous, definition)
    assert denied.allowed is False and denied.check == "require_auth" and "require_auth" in denied.reason
    assert gate.judge_at_once(anonymous, definition) == denied
    by_rule = PolicyGate(rule_provider=Rules(PolicyRule(7, "deny", description="no wiping")))
    assert by_rule.judge_at_once(agent, definition) is None  # the provider must be asked
    assert await by_rule.judge(agent, definition) == Verdict(False, "no wiping", "rule")
    allowed = await PolicyGate(rule_provider=Rules(PolicyRule(8, "allow"))).judge(agent, definition)
    assert allowed.allowed and allowed.check == "rule"
    assert await by_rule.authorize(agent, definition) == "no wiping"  # the str | None form stays


def _definitions(obj: Any) -> list[Any]:
    from milpa_chat.runtime.declare import definitions_from

    return definitions_from(obj)


@pytest.mark.parametrize("audit_handlers", ["null only", "a real handler"])
async def test_a_refused_call_builds_no_log_record_when_only_the_null_handler_listens(
    audit_handlers: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    logger = logging.getLogger("milpa_chat.test-audit")
    logger.propagate = False
    logger.handlers = [logging.NullHandler()]
    lines: list[logging.LogRecord] = []
    if audit_handlers == "a real handler":

        class Keep(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                lines.append(record)

        handler = Keep()
        logger.addHandler(handler)
    from milpa_chat.runtime import AuditLogger

    registry = ToolRegistry(store=MemoryStore(), audit=AuditLogger(logger))
    registry.scan(NoteTools())
    made: list[int] = []

    def counted(make):
        def counting(*a, **k):
            made.append(1)
            return make(*a, **k)

        return counting

    original = logger.makeRecord
    monkeypatch.setattr(logger, "makeRecord", counted(original))
    from milpa_chat.runtime import audit

    copied = audit._records.make
    monkeypatch.setattr(audit._records, "make", counted(copied))
    result = await registry.call("delete_note", {"note_id": "five"})
    assert result.code == ErrorCode.VALIDATION_ERROR
    if audit_handlers == "null only":
        assert made == [] and lines == []
    else:
        assert len(made) == 1 and "VALIDATION_FAILED" in lines[0].getMessage()

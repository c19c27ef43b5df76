"""The call pipeline, step by step: resolve, validate, authorize, rate limit, plan, execute, audit."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest

from milpa_chat import ErrorCode, ToolContext, ToolError, ToolRegistry, ToolResult, tool
from milpa_chat.runtime import RateLimiter
from milpa_chat.store import MemoryStore
from milpa_chat.testing import ManualClock

from .conftest import NoteTools


async def test_unknown_tool_is_a_typed_error_with_suggestions(registry: ToolRegistry) -> None:
    r = await registry.call("list_note", {})
    assert r.success is False and r.code == ErrorCode.TOOL_NOT_FOUND
    assert "Tool not found: list_note" in (r.error or "")
    assert "list_notes" in (r.error or "") and r.data == {"suggestions": ["list_notes"]}
    assert r.meta["tool"] == "list_note" and r.meta["type"] == "error"


async def test_validation_error_names_the_field(registry: ToolRegistry) -> None:
    r = await registry.call("delete_note", {"note_id": "five"})
    assert r.code == ErrorCode.VALIDATION_ERROR
    assert "note_id" in (r.error or "")
    assert r.data["errors"][0]["path"] == "note_id"
    missing = await registry.call("delete_note", {})
    assert "note_id" in (missing.error or "") and "issing" in (missing.error or "")


async def test_arguments_must_be_an_object(registry: ToolRegistry) -> None:
    r = await registry.call("list_notes", [1, 2])  # type: ignore[arg-type]
    assert r.code == ErrorCode.VALIDATION_ERROR and "must be a JSON object" in (r.error or "")


async def test_clamp_moves_out_of_range_numbers_into_range(registry: ToolRegistry) -> None:
    high = await registry.call("list_notes", {"page": 5000})
    low = await registry.call("list_notes", {"page": -3})
    assert high.data["page"] == 1000 and low.data["page"] == 1


async def test_scope_denial_names_the_missing_scope(registry: ToolRegistry) -> None:
    ctx = ToolContext.mcp("r", "agent:reader", ["tasks:write"])
    r = await registry.call("list_notes", {}, ctx)
    assert r.code == ErrorCode.FORBIDDEN
    assert r.error == (
        "Missing required scope for tool 'list_notes'. Need one of: notes:read — context has: tasks:write."
    )


async def test_require_auth_denial(registry: ToolRegistry) -> None:
    r = await registry.call("list_notes", {}, ToolContext(channel="mcp", scopes=("notes:read",)))
    assert r.error == "channel 'mcp' requires an authenticated principal (require_auth) — none provided."


async def test_unknown_channel_fails_closed(registry: ToolRegistry) -> None:
    r = await registry.call("list_notes", {}, ToolContext(channel="pager", scopes=("*",)))
    assert r.code == ErrorCode.FORBIDDEN and "require_auth" in (r.error or "")


async def test_sync_tool_runs_off_the_event_loop_and_async_tool_on_it(
    registry: ToolRegistry, notes: NoteTools, writer: ToolContext
) -> None:
    await registry.call("list_notes", {}, writer)
    assert notes.threads[-1] != threading.current_thread().name
    token = (await registry.call("delete_note", {"note_id": 1}, writer)).confirm_token
    await registry.call("delete_note", {"confirm_token": token}, writer)
    assert notes.threads[-1] == threading.current_thread().name


async def test_bare_values_are_wrapped_with_meta(registry: ToolRegistry, writer: ToolContext) -> None:
    r = await registry.call("archive_note", {"note_id": 3}, writer)
    assert r.success and r.data == {"archived": 3}
    assert {"tool", "took_ms", "request_id", "channel", "principal"} <= set(r.meta)
    assert r.meta["request_id"] == "req-1" and r.meta["principal"] == "agent:writer"


async def test_exception_becomes_internal_error_without_internals(
    registry: ToolRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    r = await registry.call("boom", {"password": "s3cret"})
    assert r.code == ErrorCode.INTERNAL_ERROR
    assert "hunter2" not in (r.error or "") and "RuntimeError" not in (r.error or "")
    assert "failed with an internal error" in (r.error or "")
    audit = [rec.getMessage() for rec in caplog.records if rec.name == "milpa_chat.audit"]
    assert any("ERROR:EXCEPTION" in line for line in audit)
    assert not any("s3cret" in line for line in audit)


async def test_tool_error_is_shown_with_its_code() -> None:
    @tool("find", "Find a thing", mutating=False)
    def find(key: str) -> str:
        raise ToolError(f"No thing called {key!r}", code=ErrorCode.NOT_FOUND)

    reg = ToolRegistry()
    reg.scan(find)
    r = await reg.call("find", {"key": "x"})
    assert (r.success, r.code, r.error) == (False, "NOT_FOUND", "No thing called 'x'")


async def test_soft_timeout_is_recorded_not_enforced() -> None:
    @tool("slow", "Sleeps", timeout=0.01, mutating=False)
    async def slow() -> str:
        await asyncio.sleep(0.05)
        return "done"

    reg = ToolRegistry()
    reg.scan(slow)
    r = await reg.call("slow")
    assert r.success and r.data == "done"
    assert r.meta["timeout_exceeded"] is True and r.meta["timeout_limit"] == 0.01
    assert r.meta["execution_time"] >= 0.04


async def test_plan_mode_validates_and_authorizes_but_never_runs(
    registry: ToolRegistry, notes: NoteTools, writer: ToolContext
) -> None:
    r = await registry.call("delete_note", {"note_id": 2}, writer.as_plan())
    assert r.success and notes.deleted == []
    assert r.data["plan"] == {
        "tool": "delete_note",
        "mutating": True,
        "effect_declared": True,
        "requires_confirmation": True,
        "requires_verification": False,
        "scopes_required": ["notes:write"],
        "timeout": 30.0,
        "args": {"note_id": 2},
    }
    denied = await registry.call("delete_note", {"note_id": 2}, ToolContext.mcp("r", "x", []).as_plan())
    assert denied.code == ErrorCode.FORBIDDEN


async def test_rate_limit_per_channel_principal_tool(clock: ManualClock) -> None:
    store = MemoryStore(clock=clock)
    reg = ToolRegistry(store=store, rate_limiter=RateLimiter(store, limit=3, window=10))
    reg.scan(NoteTools())
    a = ToolContext.mcp("r", "agent:a", ["*"])
    b = ToolContext.mcp("r", "agent:b", ["*"])
    results = [await reg.call("list_notes", {}, a) for _ in range(4)]
    assert [r.success for r in results] == [True, True, True, False]
    denied = results[-1]
    assert denied.code == ErrorCode.RATE_LIMITED
    assert "mcp:agent:a:list_notes" in (denied.error or "") and "max 3 tokens per 10s" in (denied.error or "")
    assert denied.meta["retry_after_seconds"] == 10
    assert (await reg.call("list_notes", {}, b)).success
    clock.advance(10.5)
    assert (await reg.call("list_notes", {}, a)).success


async def test_mutating_calls_cost_more(clock: ManualClock) -> None:
    store = MemoryStore(clock=clock)
    reg = ToolRegistry(store=store, rate_limiter=RateLimiter(store, limit=10, window=60))
    reg.scan(NoteTools())
    ctx = ToolContext.cli()
    assert (await reg.call("archive_note", {"note_id": 1}, ctx)).success
    assert (await reg.call("archive_note", {"note_id": 1}, ctx)).success
    assert (await reg.call("archive_note", {"note_id": 1}, ctx)).code == ErrorCode.RATE_LIMITED


async def test_audit_lines_redact_secrets(caplog: pytest.LogCaptureFixture) -> None:
    @tool("login", "Log in", mutating=False)
    def login(user: str, apiKey: str, options: dict[str, Any] | None = None) -> str:
        return "ok"

    reg = ToolRegistry()
    reg.scan(login)
    caplog.set_level(logging.INFO, logger="milpa_chat.audit")
    await reg.call("login", {"user": "ana", "apiKey": "K-123", "options": {"Client-Secret": "CS", "n": 1}})
    line = next(r.getMessage() for r in caplog.records if r.name == "milpa_chat.audit")
    assert "| OK |" in line and "ana" in line and "K-123" not in line and "CS" not in line
    assert line.count("***REDACTED***") == 2


async def test_validation_failure_and_denial_are_audited(
    registry: ToolRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="milpa_chat.audit")
    await registry.call("delete_note", {"note_id": "x"})
    await registry.call("list_notes", {}, ToolContext.mcp("r", "p", []))
    lines = [r.getMessage() for r in caplog.records if r.name == "milpa_chat.audit"]
    assert any(line.startswith("[ToolAudit] VALIDATION_FAILED") for line in lines)
    assert any(line.startswith("[ToolAudit] AUTH_DENIED") and "reason=Missing required scope" in line for line in lines)


def test_call_sync_without_a_loop(registry: ToolRegistry) -> None:
    assert registry.call_sync("list_notes", {"page": 2}).data["page"] == 2


async def test_call_sync_inside_a_running_loop(registry: ToolRegistry) -> None:
    r = registry.call_sync("list_notes", {"page": 3})
    assert r.success and r.data["page"] == 3


def test_catalogue_summaries_and_budget(registry: ToolRegistry) -> None:
    names = [s["name"] for s in registry.get_tool_summaries()]
    assert names == ["list_notes", "delete_note", "archive_note", "boom"]
    first = registry.get_tool_summaries()[0]
    assert set(first) == {"name", "description", "inputSchema"}
    assert first["inputSchema"]["properties"]["page"]["minimum"] == 1
    reader = ToolContext.mcp("r", "p", ["notes:read"])
    assert [s["name"] for s in registry.get_tool_summaries(reader)] == ["list_notes", "boom"]
    budget = registry.get_tools_within_budget("gpt-4", priority_tools=["boom"])
    assert budget["tools"][0]["name"] == "boom" and budget["budget"] == 2457 and budget["excluded"] == []
    tiny = registry.get_tools_within_budget("unknown-model")
    assert tiny["budget"] == 2457


def test_duplicate_registration_is_refused(registry: ToolRegistry, notes: NoteTools) -> None:
    from milpa_chat.errors import ToolAlreadyRegisteredError

    with pytest.raises(ToolAlreadyRegisteredError, match="list_notes"):
        registry.scan(notes)
    assert len(registry) == 4


async def test_hand_registered_tool_with_json_schema() -> None:
    reg = ToolRegistry()
    seen: list[tuple[dict[str, Any], str]] = []

    async def handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        seen.append((args, ctx.channel))
        return ToolResult.success({"ok": True})

    reg.register(
        "update_post",
        "Update a post",
        {
            "type": "object",
            "properties": {
                "post_id": {"type": "integer"},
                "updates": {"type": "object", "properties": {"title": {"type": "string"}}},
            },
            "required": ["post_id", "updates"],
        },
        handler,
        mutating=False,
    )
    bad = await reg.call("update_post", {"post_id": 1, "updates": {"title": 5}})
    assert bad.code == ErrorCode.VALIDATION_ERROR and "updates.title" in (bad.error or "")
    ok = await reg.call("update_post", {"post_id": 1, "updates": {"title": "Hi"}})
    assert ok.success and seen == [({"post_id": 1, "updates": {"title": "Hi"}}, "cli")]

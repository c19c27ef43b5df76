"""Confirm tokens (snapshot, one time, expiry, tool- and principal-bound) and the event anchor."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from milpa_chat import ErrorCode, ToolContext, ToolRegistry, ToolResult
from milpa_chat.runtime import EventDispatcher, PolicyGate, PolicyRule
from milpa_chat.store import MemoryStore
from milpa_chat.testing import ManualClock

from .conftest import NoteTools


async def test_confirm_round_trip_runs_the_snapshotted_arguments_once(
    registry: ToolRegistry, notes: NoteTools, writer: ToolContext
) -> None:
    first = await registry.call("delete_note", {"note_id": 1}, writer)
    assert first.success and first.requires_confirmation() and notes.deleted == []
    assert first.type == "confirmation"
    assert first.data["action_summary"] == "delete_note(note_id=1)" == first.message
    token = first.confirm_token
    assert token is not None and len(token) == 32
    # the replay's other arguments are inert: the approved snapshot runs
    second = await registry.call("delete_note", {"note_id": 2, "confirm_token": token}, writer)
    assert second.success and second.data == {"deleted": 1} and notes.deleted == [1]
    again = await registry.call("delete_note", {"confirm_token": token}, writer)
    assert again.code == ErrorCode.VALIDATION_ERROR and again.error == "Invalid or expired confirmation token"
    assert notes.deleted == [1]


async def test_token_expires(registry: ToolRegistry, notes: NoteTools, writer: ToolContext, clock: ManualClock) -> None:
    token = (await registry.call("delete_note", {"note_id": 1}, writer)).confirm_token
    clock.advance(61)
    r = await registry.call("delete_note", {"confirm_token": token}, writer)
    assert r.error == "Invalid or expired confirmation token" and notes.deleted == []


async def test_token_is_bound_to_tool_and_principal(
    registry: ToolRegistry, notes: NoteTools, writer: ToolContext
) -> None:
    token = (await registry.call("delete_note", {"note_id": 1}, writer)).confirm_token
    other_tool = await registry.call("archive_note", {"note_id": 1, "confirm_token": token}, writer)
    assert other_tool.code == ErrorCode.VALIDATION_ERROR
    thief = ToolContext.mcp("r", "agent:thief", ["notes:write"])
    stolen = await registry.call("delete_note", {"confirm_token": token}, thief)
    assert stolen.code == ErrorCode.VALIDATION_ERROR and notes.deleted == []
    # neither refusal burned the token for its owner
    assert (await registry.call("delete_note", {"confirm_token": token}, writer)).success
    assert notes.deleted == [1]


async def test_fifty_concurrent_redemptions_run_the_tool_once(
    registry: ToolRegistry, notes: NoteTools, writer: ToolContext
) -> None:
    token = (await registry.call("delete_note", {"note_id": 2}, writer)).confirm_token
    results = await asyncio.gather(*[registry.call("delete_note", {"confirm_token": token}, writer) for _ in range(50)])
    assert sum(r.success for r in results) == 1 and notes.deleted == [2]


async def test_telegram_policy_requires_confirmation_for_mutating_tools(
    registry: ToolRegistry, notes: NoteTools
) -> None:
    ctx = ToolContext.telegram(10, 20, ["notes:write"])
    r = await registry.call("archive_note", {"note_id": 4}, ctx)
    assert r.requires_confirmation()
    done = await registry.call("archive_note", {"confirm_token": r.confirm_token}, ctx)
    assert done.data == {"archived": 4}


async def test_cli_runs_mutating_tools_without_a_token(registry: ToolRegistry) -> None:
    assert (await registry.call("archive_note", {"note_id": 4})).data == {"archived": 4}


async def test_executing_listener_never_sees_a_denied_call(notes: NoteTools) -> None:
    dispatcher = EventDispatcher()
    seen: list[str] = []
    dispatcher.subscribe("tool.executing", lambda name, payload: seen.append(payload["event"].name))
    reg = ToolRegistry(dispatcher=dispatcher)
    reg.scan(notes)
    await reg.call("list_notes", {}, ToolContext.mcp("r", "p", []))  # denied
    await reg.call("list_notes", {"page": "x"})  # invalid
    await reg.call("delete_note", {"note_id": 1}, ToolContext.mcp("r", "p", ["*"]).as_plan())  # plan
    await reg.call("delete_note", {"note_id": 1}, ToolContext.telegram(1, 2, ["*"]))  # asks confirmation
    assert seen == []
    await reg.call("list_notes", {})
    assert seen == ["list_notes"]


async def test_short_circuit_answers_for_the_tool_and_is_marked_cache_served(notes: NoteTools) -> None:
    dispatcher = EventDispatcher()
    executed: list[bool] = []

    def cache(name: str, payload: Mapping[str, Any]) -> None:
        payload["slot"].short_circuit({"notes": ["cached"]})

    dispatcher.subscribe("tool.executing", cache)
    dispatcher.subscribe("tool.executed", lambda n, p: executed.append(p["event"].cache_served))
    reg = ToolRegistry(dispatcher=dispatcher)
    reg.scan(notes)
    r = await reg.call("list_notes", {})
    assert r.data == {"notes": ["cached"]} and notes.threads == [] and executed == [True]


async def test_stop_vetoes_the_call(notes: NoteTools) -> None:
    dispatcher = EventDispatcher()

    async def veto(name: str, payload: Mapping[str, Any]) -> None:
        payload["slot"].stop()

    dispatcher.subscribe("tool.executing", veto)
    reg = ToolRegistry(dispatcher=dispatcher)
    reg.scan(notes)
    r = await reg.call("list_notes", {})
    assert r.is_blocked() and r.error == "Tool execution vetoed by an event listener" and notes.threads == []


async def test_a_failing_executing_listener_fails_closed(notes: NoteTools) -> None:
    dispatcher = EventDispatcher()

    def broken(name: str, payload: Mapping[str, Any]) -> None:
        raise KeyError("cache down")

    dispatcher.subscribe("tool.executing", broken)
    reg = ToolRegistry(dispatcher=dispatcher)
    reg.scan(notes)
    r = await reg.call("list_notes", {})
    assert r.code == ErrorCode.INTERNAL_ERROR and notes.threads == []


async def test_failed_event_carries_the_exception(notes: NoteTools) -> None:
    dispatcher = EventDispatcher()
    failures: list[BaseException] = []
    dispatcher.subscribe("tool.failed", lambda n, p: failures.append(p["event"].exception))
    reg = ToolRegistry(dispatcher=dispatcher)
    reg.scan(notes)
    await reg.call("boom", {})
    assert len(failures) == 1 and isinstance(failures[0], RuntimeError)


class Rules:
    def __init__(self, rule: PolicyRule | None = None, error: Exception | None = None) -> None:
        self.rule, self.error = rule, error

    async def find_matching_rule(
        self, channel: str, principal: str | None, tool: str, mutating: bool
    ) -> PolicyRule | None:
        if self.error:
            raise self.error
        return self.rule


async def test_rule_provider_deny_allow_scopes_and_failure(notes: NoteTools, clock: ManualClock) -> None:
    gate = PolicyGate()
    reg = ToolRegistry(store=MemoryStore(clock=clock), policy=gate)
    reg.scan(notes)
    ctx = ToolContext.mcp("r", "agent:a", ["notes:read"])
    gate.rule_provider = Rules(PolicyRule(7, "deny"))
    r = await reg.call("list_notes", {}, ctx)
    assert r.error == "Denied by policy rule #7 for tool 'list_notes' on channel 'mcp' (principal: agent:a)."
    gate.rule_provider = Rules(PolicyRule(8, "deny", description="Closed on Sundays"))
    assert (await reg.call("list_notes", {}, ctx)).error == "Closed on Sundays"
    gate.rule_provider = Rules(PolicyRule(9, "allow", requires_scopes=("audit:read",)))
    assert (await reg.call("list_notes", {}, ctx)).error == (
        "Policy rule #9 for tool 'list_notes' requires one of these scopes: audit:read — context has: notes:read."
    )
    gate.rule_provider = Rules(PolicyRule(10, "allow"))
    assert (await reg.call("list_notes", {}, ctx)).success
    gate.rule_provider = Rules(error=ConnectionError("db down"))
    failed = await reg.call("list_notes", {}, ctx)
    assert failed.code == ErrorCode.FORBIDDEN
    assert failed.error == (
        "Policy rule provider Rules failed (ConnectionError) — tool 'list_notes' denied (fail-closed)."
    )


async def test_block_mutating_policy_names_tool_and_channel(notes: NoteTools) -> None:
    from milpa_chat.runtime import ChannelPolicy

    reg = ToolRegistry(policy=PolicyGate({"mcp": ChannelPolicy(require_auth=True, block_mutating=True)}))
    reg.scan(notes)
    r = await reg.call("archive_note", {"note_id": 1}, ToolContext.mcp("r", "p", ["*"]))
    assert r.error == "Mutating tool 'archive_note' is blocked on channel 'mcp' (block_mutating policy)."
    ok = await reg.call("list_notes", {}, ToolContext.mcp("r", "p", ["*"]))
    assert ok.success and isinstance(ok, ToolResult)

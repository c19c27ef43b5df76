"""The steps see a frozen set of services, never the registry; a service set after construction reaches the next
call (an approved run included); the approval desk is built with its hooks and takes more only through install."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from milpa_chat import ErrorCode, ToolContext, ToolRegistry
from milpa_chat.runtime import ApprovalDesk, ApprovalRefused, Call, ChannelPolicy, PolicyGate, RateLimiter
from milpa_chat.runtime.approval_hooks import ApprovalHooks, Change
from milpa_chat.runtime.pipeline import Outcome
from milpa_chat.runtime.services import Services
from milpa_chat.store import MemoryStore

from .conftest import NoteTools


async def test_a_step_sees_the_registrys_services_frozen_and_not_the_registry(
    registry: ToolRegistry, writer: ToolContext
) -> None:
    seen: list[Call] = []

    def look(call: Call) -> Outcome:
        seen.append(call)
        return None

    registry.steps.insert(1, look)
    result = await registry.call("list_notes", {}, writer)
    assert result.success
    assert seen[0].services is registry.services and isinstance(seen[0].services, Services)
    assert not hasattr(seen[0], "registry")
    with pytest.raises(dataclasses.FrozenInstanceError):
        seen[0].services.policy = PolicyGate()  # type: ignore[misc]


async def test_a_rate_limiter_set_after_construction_limits_the_next_call(
    registry: ToolRegistry, writer: ToolContext
) -> None:
    before = registry.services
    assert (await registry.call("list_notes", {}, writer)).success
    registry.rate_limiter = RateLimiter(registry.store, limit=1, window=60)
    assert registry.services is not before and registry.services.rate_limiter is registry.rate_limiter
    first = await registry.call("list_notes", {}, writer)
    second = await registry.call("list_notes", {}, writer)
    assert first.success and second.code == ErrorCode.RATE_LIMITED


async def test_a_confirm_token_is_redeemed_under_the_policy_as_it_is_now(notes: NoteTools) -> None:
    """A policy replaced after the token was handed out decides its redemption: refused, the tool never runs."""
    registry = ToolRegistry(store=MemoryStore())
    registry.scan(notes)
    me = ToolContext.cli()
    asked = await registry.call("delete_note", {"note_id": 1}, me)
    token = asked.data["confirm_token"]
    registry.policy = PolicyGate({"cli": ChannelPolicy(block_mutating=True)})
    redeemed = await registry.call("delete_note", {"confirm_token": token}, me)
    assert redeemed.code == ErrorCode.FORBIDDEN and notes.deleted == []


async def test_an_approved_run_goes_through_the_runner_the_registry_installed(notes: NoteTools) -> None:
    registry = ToolRegistry(store=MemoryStore())
    registry.scan(notes)
    desk = registry.approvals
    assert desk.hooks.run == registry.run_approval
    me = ToolContext.cli()
    asked = await registry.call("delete_note", {"note_id": 2}, me)
    change = await desk.decide(asked.data["confirm_token"], "confirm", me, via="cli")
    assert change.claimed and desk.hooks.run is not None  # confirming claims the run for the one who confirmed
    result = await desk.hooks.run(change.approval, me)
    settled = await desk.get(change.approval.id)
    assert result.success and notes.deleted == [2] and settled is not None and settled.state == "executed"


async def test_a_desk_is_built_with_its_hooks_and_install_adds_an_opener_once() -> None:
    opened: list[str] = []
    followed: list[str] = []

    def opener(value: dict[str, Any], ctx: ToolContext) -> None:
        opened.append(str(value["summary"]))

    async def follower(change: Change) -> None:
        followed.append(change.event)

    desk = ApprovalDesk(MemoryStore(), hooks=ApprovalHooks(openers=[opener]))
    desk.install(opener=opener)  # the same code again: still one opener
    desk.install(follower=follower)
    assert desk.hooks.openers == [opener] and desk.openers is desk.hooks.openers and desk.follower is follower
    me = ToolContext.cli()
    a = await desk.open("confirm", me, tool=None, args={}, summary="water the milpa", expires_in=60)
    await desk.decide(a.id, "cancel", me, via="cli")
    assert opened == ["water the milpa"] and followed == ["cancelled"]


async def test_hooks_do_not_let_a_model_decide() -> None:
    """Whatever is installed, a model-made context is refused before the record is read, and audited."""
    followed: list[str] = []

    async def follower(change: Change) -> None:
        followed.append(change.event)

    desk = ApprovalDesk(MemoryStore()).install(follower=follower)
    person = ToolContext.cli()
    a = await desk.open("confirm", person, tool=None, args={}, summary="sell the harvest", expires_in=60)
    with pytest.raises(ApprovalRefused, match="A model cannot confirm"):
        await desk.decide(a.id, "confirm", person.as_model(), via="cli")
    current = await desk.get(a.id)
    assert current is not None and current.state == "pending" and followed == []

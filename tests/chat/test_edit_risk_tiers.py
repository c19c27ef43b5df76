"""Risk tiers from the declared effect: a low-risk request is approved with a tap, a high-risk one needs a
typed reason, and a high-risk approval faster than the card can be read asks for a second approver."""

from __future__ import annotations

from typing import Any

import pytest

from milpa_chat import ToolRegistry, VerifyPolicy, tool
from milpa_chat.chat import Assistant, Identities
from milpa_chat.runtime.approval_rules import risk_tier
from milpa_chat.store import MemoryStore
from milpa_chat.testing import ManualClock
from milpa_chat.testing.transport import RecordingTransport

from .conftest import ALICE, APPROVERS_CHAT, IDENTITIES, MANAGER, MANAGER2, Tools

APPROVE = VerifyPolicy(approver_scopes=("payments:approve",), expires_in=600)


class Risky(Tools):
    @tool("balance", "Read a balance (approved all the same)", scopes=["payments:send"], mutating=False, verify=APPROVE)
    async def balance(self, account: str) -> dict[str, Any]:
        return {"account": account, "balance": 10}

    @tool("wire", "Wire money (effect not declared)", scopes=["payments:send"], verify=APPROVE)
    async def wire(self, to: str) -> dict[str, Any]:
        return {"to": to}


def world(clock: ManualClock, **options: Any) -> tuple[Assistant, RecordingTransport, Risky]:
    tools = Risky()
    registry = ToolRegistry(store=MemoryStore(clock=clock))
    registry.scan(tools)
    assistant = Assistant(registry, Identities.from_dict(IDENTITIES), approval_ttl=600, risk_tiers=True, **options)
    tg = RecordingTransport("telegram")
    assistant.attach(tg)
    return assistant, tg, tools


async def approve(assistant: Assistant, tg: RecordingTransport, who: Any, note: str | None = None) -> str:
    card = tg.last(APPROVERS_CHAT)
    button = card.button("Approve")
    inbound = tg.inbound(
        who, APPROVERS_CHAT, action=button.action, ref=button.ref, message_id=card.message_id, note=note
    )
    await assistant.handle(inbound, tg)
    return tg.answers_to(who)[-1]


def test_the_tier_follows_the_declared_effect() -> None:
    registry = ToolRegistry()
    registry.scan(Risky())
    tiers = {name: risk_tier(registry.get(name))["level"] for name in ("balance", "pay", "wire")}  # type: ignore[arg-type]
    assert tiers == {"balance": "low", "pay": "high", "wire": "high"}
    assert "not declared" in risk_tier(registry.get("wire"))["why"]  # type: ignore[arg-type]
    assert risk_tier(registry.get("pay"), "low")["level"] == "low"  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'low' or 'high'"):
        risk_tier(registry.get("pay"), "medium")  # type: ignore[arg-type]


async def test_a_low_risk_request_is_approved_with_a_tap(clock: ManualClock) -> None:
    assistant, tg, _tools = world(clock)
    await tg.say(assistant, ALICE, "/balance main")
    assert "High risk" not in tg.last(APPROVERS_CHAT).text
    await approve(assistant, tg, MANAGER)
    assert "Done" in tg.last(APPROVERS_CHAT).text


async def test_a_high_risk_request_needs_a_typed_reason(clock: ManualClock) -> None:
    assistant, tg, tools = world(clock)
    await tg.say(assistant, ALICE, "/pay ACME 120")
    card = tg.last(APPROVERS_CHAT)
    assert "High risk (changes data): approving needs a typed reason." in card.text
    clock.advance(60)
    answer = await approve(assistant, tg, MANAGER)
    assert "needs a typed reason" in answer and tools.paid == []
    await approve(assistant, tg, MANAGER, note="invoice 7 checked")
    assert tools.paid == [("ACME", 120.0)] and "invoice 7 checked" in card.text


async def test_a_fast_high_risk_approval_asks_for_a_second_approver(clock: ManualClock) -> None:
    assistant, tg, tools = world(clock, fast_approval=10)
    await tg.say(assistant, ALICE, "/pay ACME 120")
    card = tg.last(APPROVERS_CHAT)
    clock.advance(2)
    answer = await approve(assistant, tg, MANAGER, note="ok")
    assert "second approver must also approve" in answer and tools.paid == []
    assert "Approved after 2 s, faster than the card can be read (10 s)" in card.text and "1 of 2" in card.text
    await approve(assistant, tg, MANAGER2, note="checked the invoice")
    assert tools.paid == [("ACME", 120.0)]


class Overridden(Tools):
    @tool(
        "wire_small",
        "Wire a small amount (undeclared effect, low risk by policy)",
        scopes=["payments:send"],
        verify=VerifyPolicy(approver_scopes=("payments:approve",), expires_in=600, risk="low"),
    )
    async def wire_small(self, to: str) -> dict[str, Any]:
        return {"to": to}


async def test_a_policy_can_say_the_risk_instead_of_the_effect(clock: ManualClock) -> None:
    tools = Overridden()
    registry = ToolRegistry(store=MemoryStore(clock=clock))
    registry.scan(tools)
    assistant = Assistant(registry, Identities.from_dict(IDENTITIES), approval_ttl=600, risk_tiers=True)
    tg = RecordingTransport("telegram")
    assistant.attach(tg)
    await tg.say(assistant, ALICE, "/wire_small ACME")
    assert "High risk" not in tg.last(APPROVERS_CHAT).text  # undeclared would be high; the policy says low
    await approve(assistant, tg, MANAGER)
    assert "Done" in tg.last(APPROVERS_CHAT).text


def test_a_risk_that_is_not_low_or_high_is_refused_at_declaration() -> None:
    from milpa_chat.errors import DeclarationError

    with pytest.raises(DeclarationError, match=r"risk=.*'low', 'high' or None"):
        VerifyPolicy(approver_scopes=("payments:approve",), risk="medium")

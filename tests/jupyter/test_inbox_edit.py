"""Edit before approve in the notebook inbox: the explorer's form prefilled with what would run; the edit
is checked as a new call, every copy of the card shows old -> new, and someone else approves it."""

from __future__ import annotations

from typing import Any

import pytest

from milpa_chat import ToolRegistry
from milpa_chat.chat import Assistant, Identities
from milpa_chat.jupyter import ApprovalInbox
from milpa_chat.runtime.approval import ApprovalRefused
from milpa_chat.store import MemoryStore
from milpa_chat.testing import ManualClock
from milpa_chat.testing.transport import RecordingTransport

from .conftest import ANA, APPROVERS_CHAT, BOB, IDENTITIES, Tools


@pytest.fixture
def assistant(tools: Tools, clock: ManualClock) -> Assistant:
    registry = ToolRegistry(store=MemoryStore(clock=clock))
    registry.scan(tools)
    return Assistant(registry, Identities.from_dict(IDENTITIES), approval_ttl=600, edits=True)


async def test_the_inbox_edit_form_amends_and_another_approver_approves(
    assistant: Assistant, telegram: RecordingTransport, tools: Tools, closing: list[Any]
) -> None:
    inbox = ApprovalInbox(assistant, principal="maria", name="Maria", scopes=["payments:approve"])
    closing.append(inbox)
    await telegram.say(assistant, ANA, "/pay to=Luis amount=120 api_key=sk-live-123")
    card = telegram.last(APPROVERS_CHAT)
    await inbox.refresh()
    [item] = inbox.pending
    assert item.edit_button in item.widget.children[1].children
    item.edit_button.click()
    panel = item.editor
    assert panel is not None and list(panel.form.fields) == ["to", "amount"]  # the secret is not shown
    assert panel.form["amount"].value == "120.0" and panel.form["to"].value == "Luis"

    panel.form["amount"].value = 80
    panel.save_button.click()
    await inbox.idle()
    assert item.editor is None and "amount: 120.0 → 80.0" in item.text  # the inbox shows the diff too
    assert "amount: 120.0 → 80.0" in card.text and "Edited by Maria via jupyter" in card.text
    a = await assistant.approvals.get(item.id)
    assert a is not None and a.args == {"to": "Luis", "amount": 80.0, "api_key": "sk-live-123"}

    # Maria edited this version: four-eyes keeps her from approving it; Bob (in Telegram) does
    refused = await inbox.approve(item.id)
    assert refused is not None and refused.state == "pending" and tools.paid == []
    assert "You edited this version" in item.text
    await telegram.tap(assistant, BOB, card, "Approve")
    assert tools.paid == [("Luis", 80.0)]


async def test_an_edit_that_does_not_validate_is_shown_beside_its_field(
    assistant: Assistant, telegram: RecordingTransport, closing: list[Any]
) -> None:
    inbox = ApprovalInbox(assistant, principal="maria", name="Maria", scopes=["payments:approve"])
    closing.append(inbox)
    await telegram.say(assistant, ANA, "/pay to=Luis amount=120")
    await inbox.refresh()
    [item] = inbox.pending
    panel = inbox.open_edit(item.id)
    with pytest.raises(ApprovalRefused) as refused:
        await inbox.edit(item.id, {"amount": "lots"})
    panel.show_refusal(refused.value.errors, str(refused.value))
    assert "number" in panel.form["amount"].error_text
    a = await assistant.approvals.get(item.id)
    assert a is not None and a.revision == 0


async def test_a_high_risk_request_needs_the_reason_box(tools: Tools, clock: ManualClock, closing: list[Any]) -> None:
    registry = ToolRegistry(store=MemoryStore(clock=clock))
    registry.scan(tools)
    assistant = Assistant(registry, Identities.from_dict(IDENTITIES), approval_ttl=600, risk_tiers=True)
    telegram = RecordingTransport("telegram")
    assistant.attach(telegram)
    inbox = ApprovalInbox(assistant, principal="maria", name="Maria", scopes=["payments:approve"])
    closing.append(inbox)
    await telegram.say(assistant, ANA, "/pay to=Luis amount=120")
    clock.advance(60)
    await inbox.refresh()
    [item] = inbox.pending
    assert "approving needs a typed reason" in item.text
    refused = await inbox.approve(item.id)
    assert refused is not None and refused.state == "pending" and "needs a typed reason" in item.text
    await inbox.approve(item.id, "invoice 7 checked")
    assert tools.paid == [("Luis", 120.0)]

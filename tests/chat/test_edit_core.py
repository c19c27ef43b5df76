"""Edit before approve, through the one decision path: re-validated, re-authorized, versioned, four-eyes."""

from __future__ import annotations

import pytest

from milpa_chat import ToolContext, ToolRegistry
from milpa_chat.chat import Assistant, Identities
from milpa_chat.runtime.approval import ApprovalRefused
from milpa_chat.store import MemoryStore
from milpa_chat.testing import ManualClock
from milpa_chat.testing.transport import RecordingTransport

from .conftest import ALICE, APPROVERS_CHAT, IDENTITIES, MANAGER, MANAGER2, STRANGER, Tools


@pytest.fixture
def assistant(tools: Tools, clock: ManualClock) -> Assistant:
    registry = ToolRegistry(store=MemoryStore(clock=clock))
    registry.scan(tools)
    return Assistant(registry, Identities.from_dict(IDENTITIES), approval_ttl=600, edits=True)


def ctx(assistant: Assistant, user: object, chat: str = APPROVERS_CHAT) -> ToolContext:
    return assistant.identities.context_for("telegram", user, chat)  # type: ignore[arg-type]


async def open_pay(assistant: Assistant, tg: RecordingTransport, amount: int = 120) -> str:
    await tg.say(assistant, ALICE, f"/pay ACME {amount}")
    return tg.last(APPROVERS_CHAT).button("Approve").ref


async def test_an_approver_edit_is_versioned_shown_on_every_copy_and_needs_another_approver(
    assistant: Assistant, tg: RecordingTransport, tools: Tools
) -> None:
    aid = await open_pay(assistant, tg)
    group, mine = tg.last(APPROVERS_CHAT), tg.last(ALICE.id)
    before = (await assistant.approvals.get(aid)).data["digest"]  # type: ignore[union-attr]
    change = await assistant.approvals.amend(aid, {"amount": 80}, ctx(assistant, MANAGER), via="telegram")
    a = change.approval
    assert a.args == {"to": "ACME", "amount": 80.0} and a.revision == 1 and a.data["digest"] != before
    assert a.revisions[0]["changes"] == {"amount": [120.0, 80.0]} and a.revisions[0]["by_name"] == "Maria"
    for card in (group, mine):  # the outbox edited every copy: old -> new, and buttons of the new version
        assert "Edited by Maria via telegram: amount: 120.0 → 80.0" in card.text
    assert group.button("Approve").ref == f"{aid}.1"
    # the editor is the author of this version: four-eyes needs someone else
    await tg.tap(assistant, MANAGER, group, "Approve")
    assert "You edited this version" in tg.answers_to(MANAGER)[-1] and tools.paid == []
    await tg.tap(assistant, MANAGER2, group, "Approve")
    assert tools.paid == [("ACME", 80.0)]


async def test_a_tap_on_a_card_of_an_older_version_is_refused(
    assistant: Assistant, tg: RecordingTransport, tools: Tools
) -> None:
    aid = await open_pay(assistant, tg)
    old = tg.last(APPROVERS_CHAT)
    stale_ref = old.button("Approve").ref
    await assistant.approvals.amend(aid, {"amount": 90}, ctx(assistant, MANAGER), via="telegram")
    inbound = tg.inbound(MANAGER2, APPROVERS_CHAT, action="approve", ref=stale_ref, message_id=old.message_id)
    await assistant.handle(inbound, tg)
    answer = tg.answers_to(MANAGER2)[-1]
    assert "older version" in answer and "Maria edited amount" in answer and tools.paid == []
    assert (await assistant.approvals.get(aid)).state == "pending"  # type: ignore[union-attr]


async def test_an_edit_is_revalidated_and_reauthorized_like_a_new_call(
    assistant: Assistant, tg: RecordingTransport
) -> None:
    aid = await open_pay(assistant, tg)
    with pytest.raises(ApprovalRefused) as bad:
        await assistant.approvals.amend(aid, {"amount": "lots"}, ctx(assistant, MANAGER), via="telegram")
    assert bad.value.code == "VALIDATION_ERROR" and "amount" in bad.value.errors
    assert "not valid" in str(bad.value)
    with pytest.raises(ApprovalRefused, match="scopes"):
        await assistant.approvals.amend(aid, {"amount": 1}, ctx(assistant, STRANGER), via="telegram")
    with pytest.raises(ApprovalRefused, match="cannot edit this request"):  # the requester of a verification
        await assistant.approvals.amend(aid, {"amount": 1}, ctx(assistant, ALICE, ALICE.id), via="telegram")
    with pytest.raises(ApprovalRefused, match="Nothing changed"):
        await assistant.approvals.amend(aid, {"amount": 120}, ctx(assistant, MANAGER), via="telegram")
    # the requester lost the scope to pay since asking: the edit is refused as a new call would be
    assistant.identities.users["telegram:1001"] = ("notes:read",)
    with pytest.raises(ApprovalRefused, match="not allowed for Alice"):
        await assistant.approvals.amend(aid, {"amount": 5}, ctx(assistant, MANAGER), via="telegram")
    a = await assistant.approvals.get(aid)
    assert a is not None and a.revision == 0 and a.args["amount"] == 120.0


async def test_edit_resets_the_votes_so_far(assistant: Assistant, tg: RecordingTransport, tools: Tools) -> None:
    await tg.say(assistant, ALICE, "/big_pay ACME 500")
    group = tg.last(APPROVERS_CHAT)
    aid = group.button("Approve").ref
    await tg.tap(assistant, MANAGER, group, "Approve")
    assert len((await assistant.approvals.get(aid)).votes) == 1  # type: ignore[union-attr]
    change = await assistant.approvals.amend(aid, {"amount": 400}, ctx(assistant, MANAGER2), via="telegram")
    assert change.approval.votes == [] and "reset" in change.message


async def test_edit_by_reply_prompts_per_field(assistant: Assistant, tg: RecordingTransport, tools: Tools) -> None:
    aid = await open_pay(assistant, tg)
    group = tg.last(APPROVERS_CHAT)
    await tg.tap(assistant, MANAGER, group, "Edit")
    chooser = tg.last(APPROVERS_CHAT)
    assert "which value" in chooser.text and [b.label for b in chooser.buttons] == ["to (ACME)", "amount (120.0)"]
    await tg.tap(assistant, MANAGER, chooser, "amount")
    assert "New value for amount (now 120.0)?" in tg.last(APPROVERS_CHAT).text
    await tg.say(assistant, MANAGER2, "999", APPROVERS_CHAT)  # someone else's message is not the value
    assert (await assistant.approvals.get(aid)).revision == 0  # type: ignore[union-attr]
    await tg.say(assistant, MANAGER, "lots", APPROVERS_CHAT)
    assert "not valid" in tg.last(APPROVERS_CHAT).text and "Reply with another value" in tg.last(APPROVERS_CHAT).text
    await tg.say(assistant, MANAGER, "80", APPROVERS_CHAT)
    a = await assistant.approvals.get(aid)
    assert a is not None and a.args["amount"] == 80.0 and a.data["author"] == "telegram:2001"
    assert "amount: 120.0 → 80.0" in group.text and "Edited amount" in tg.last(APPROVERS_CHAT).text
    await tg.tap(assistant, MANAGER, group, "Edit")
    await tg.tap(assistant, MANAGER, tg.last(APPROVERS_CHAT), "to")
    await tg.say(assistant, MANAGER, "/cancel", APPROVERS_CHAT)
    assert "nothing was changed" in tg.last(APPROVERS_CHAT).text
    assert (await assistant.approvals.get(aid)).revision == 1  # type: ignore[union-attr]


async def test_the_requester_edits_a_confirm_before_confirming(
    assistant: Assistant, tg: RecordingTransport, tools: Tools
) -> None:
    await tg.say(assistant, ALICE, "/delete_note 5")
    card = tg.last(ALICE.id)
    await tg.tap(assistant, ALICE, card, "Edit")  # one field: straight to its prompt
    assert "New value for note_id (now 5)?" in tg.last(ALICE.id).text
    await tg.say(assistant, ALICE, "7")
    assert "note_id: 5 → 7" in card.text
    await tg.tap(assistant, ALICE, card, "Confirm")
    assert tools.deleted == [7]


async def test_cards_offer_edit_only_when_the_assistant_allows_edits(tools: Tools, clock: ManualClock) -> None:
    registry = ToolRegistry(store=MemoryStore(clock=clock))
    registry.scan(tools)
    plain = Assistant(registry, Identities.from_dict(IDENTITIES), approval_ttl=600)
    tg = RecordingTransport("telegram")
    plain.attach(tg)
    await tg.say(plain, ALICE, "/pay ACME 5")
    assert {b.action for b in tg.last(APPROVERS_CHAT).buttons} == {"approve", "reject"}


async def test_a_request_takes_a_bounded_number_of_edits(assistant: Assistant, tg: RecordingTransport) -> None:
    from milpa_chat.runtime.approval_rules import MAX_REVISIONS

    aid = await open_pay(assistant, tg)
    for i in range(MAX_REVISIONS):
        await assistant.approvals.amend(aid, {"amount": 200 + i}, ctx(assistant, MANAGER), via="telegram", follow=False)
    with pytest.raises(ApprovalRefused, match="already edited 50 times; reject it"):
        await assistant.approvals.amend(aid, {"amount": 1}, ctx(assistant, MANAGER), via="telegram")

"""One approval, one decision path: every way of deciding edits every card and runs the tool exactly once."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from milpa_chat import Param, ToolResult, tool
from milpa_chat.chat import Assistant
from milpa_chat.chat.inbound import Inbound
from milpa_chat.renderers.model import Message
from milpa_chat.store import MemoryStore
from milpa_chat.testing import ManualClock
from milpa_chat.testing.transport import RecordingTransport

from .conftest import ALICE, APPROVERS_CHAT, BOB, MANAGER, MANAGER2, Tools, make_assistant


class PagingTools(Tools):
    @tool("archive_notes", "Archive notes and list what was archived", scopes=["notes:write"], mutating=True)
    def archive_notes(self, page: Annotated[int, Param("Page", clamp=(1, 100))] = 1) -> ToolResult:
        items = [{"id": k, "title": v} for k, v in sorted(self.notes.items())]
        return ToolResult.paginated(items[(page - 1) * 10 : page * 10], page, len(items), 10, "Archived")


class FlakyAnswers(RecordingTransport):
    """A surface whose tap answers fail (a 502 from the platform), as Telegram's answerCallbackQuery can."""

    async def answer(self, inbound: Inbound, text: str, *, alert: bool = False) -> None:
        raise ConnectionError("502 Bad Gateway")


class FlakyEdits(RecordingTransport):
    """A surface whose edits fail ``failures`` times, then recover."""

    def __init__(self, surface: str, failures: int) -> None:
        super().__init__(surface)
        self.failures = failures

    async def edit(self, ref: Any, message: Message) -> None:
        if self.failures:
            self.failures -= 1
            error = ConnectionError("429 Too Many Requests")
            error.retry_after = 5  # type: ignore[attr-defined]
            raise error
        await super().edit(ref, message)


async def test_a_typed_resolve_edits_every_card_and_runs_the_tool_once(
    assistant: Assistant, tg: RecordingTransport, tools: Tools
) -> None:
    await tg.say(assistant, ALICE, "/pay ACME 10")
    group, mine = tg.last(APPROVERS_CHAT), tg.last(ALICE.id)
    request_id = group.button("Approve").ref
    await tg.say(assistant, MANAGER, f"/resolve_verification {request_id} grant")
    assert tools.paid == [("ACME", 10.0)]
    for card in (group, mine):
        assert card.buttons == () and "Done" in card.text and "Maria" in card.text
    assert "Paid" in tg.last(ALICE.id).text or "10" in tg.last(ALICE.id).text  # the result reached the requester
    await tg.tap(assistant, MANAGER2, group.__class__(group.chat_id, group.message_id, group.history[0]), "Approve")
    assert tools.paid == [("ACME", 10.0)] and tg.answers_to(MANAGER2)[-1].startswith("Already")


async def test_resolve_through_the_registry_is_the_same_decision(
    assistant: Assistant, tg: RecordingTransport, tools: Tools
) -> None:
    await tg.say(assistant, ALICE, "/pay ACME 11")
    group = tg.last(APPROVERS_CHAT)
    manager = assistant.identities.context_for("telegram", MANAGER, APPROVERS_CHAT)
    outcome = await assistant.registry.call(
        "resolve_verification",
        {"request_id": group.button("Reject").ref, "decision": "reject", "reason": "no invoice"},
        manager,
    )
    assert outcome.success and outcome.data["status"] == "failed"
    assert group.buttons == () and "Rejected" in group.text and "no invoice" in group.text
    assert "rejected by Maria" in tg.last(ALICE.id).text and tools.paid == []


async def test_request_verification_from_chat_reaches_the_approvers(tools: Tools, clock: ManualClock) -> None:
    identities = {
        "roles": {},
        "users": {"telegram:1001": ["verification:request"], "telegram:2001": ["verification:approve"]},
        "defaults": {"scopes": []},
        "approvers": {"telegram": [APPROVERS_CHAT]},
    }
    assistant = make_assistant(tools, MemoryStore(clock=clock), identities)
    tg = RecordingTransport("telegram")
    assistant.attach(tg)
    await tg.say(assistant, ALICE, '/request_verification subject="gate:report.publish" reason="quarterly"')
    group, mine = tg.last(APPROVERS_CHAT), tg.last(ALICE.id)
    assert "gate:report.publish" in group.text and {b.action for b in group.buttons} == {"approve", "reject"}
    assert [b.action for b in mine.buttons] == ["cancel"]  # the requester may withdraw
    await tg.tap(assistant, MANAGER, group, "Approve")
    assert group.buttons == () and mine.buttons == () and "Approved" in group.text
    assert "was approved by Maria" in tg.last(ALICE.id).text


async def test_a_failing_tap_answer_never_blocks_an_approved_action(tools: Tools, clock: ManualClock) -> None:
    assistant = make_assistant(tools, MemoryStore(clock=clock))
    tg = FlakyAnswers("telegram")
    assistant.attach(tg)
    await tg.say(assistant, ALICE, "/delete_note 3")
    card = tg.last(ALICE.id)
    await tg.tap(assistant, ALICE, card, "Confirm")
    assert tools.deleted == [3] and card.buttons == () and "Done" in card.text
    (approval,) = await assistant.approvals.listing()
    assert approval.state == "executed" and approval.effects() == []


class SlowAnswers(RecordingTransport):
    """A surface whose tap answers take ``delay`` seconds to reach the platform; ``ran_before_answered`` says
    whether the tool had run by the time an answer was sent."""

    def __init__(self, surface: str, tools: Tools, delay: float) -> None:
        super().__init__(surface)
        self.tools, self.delay = tools, delay
        self.ran_before_answered: list[bool] = []

    async def answer(self, inbound: Inbound, text: str, *, alert: bool = False) -> None:
        await asyncio.sleep(self.delay)
        self.ran_before_answered.append(bool(self.tools.deleted))
        await super().answer(inbound, text, alert=alert)


async def test_a_confirm_tap_is_answered_before_its_run_starts(tools: Tools, clock: ManualClock) -> None:
    """One request of a tap in flight at a time, as a bare handler's: the answer, then the run and its edits."""
    assistant = make_assistant(tools, MemoryStore(clock=clock))
    tg = SlowAnswers("telegram", tools, delay=0.05)
    assistant.attach(tg)
    await tg.say(assistant, ALICE, "/delete_note 3")
    card = tg.last(ALICE.id)
    await tg.tap(assistant, ALICE, card, "Confirm")
    assert tg.ran_before_answered == [False] and tools.deleted == [3] and "Done" in card.text


async def test_a_slow_tap_answer_holds_the_run_back_at_most_answer_grace(tools: Tools, clock: ManualClock) -> None:
    assistant = make_assistant(tools, MemoryStore(clock=clock))
    assistant.flows.answer_grace = 0.05
    tg = SlowAnswers("telegram", tools, delay=3.0)  # a platform that takes its time with answers
    assistant.attach(tg)
    await tg.say(assistant, ALICE, "/delete_note 3")
    card = tg.last(ALICE.id)
    tapping = asyncio.ensure_future(tg.tap(assistant, ALICE, card, "Confirm"))
    for _ in range(100):  # at most 1 s: the run started after the grace, not after the answer
        if "Done" in card.text:
            break
        await asyncio.sleep(0.01)
    assert tools.deleted == [3] and "Done" in card.text and tg.ran_before_answered == []
    await tapping  # the answer still goes out, after the run
    assert tg.ran_before_answered == [True]


class CountingStore(MemoryStore):
    """Counts the reads of approval records."""

    reads = 0

    async def get(self, collection: str, key: str) -> Any:
        self.reads += collection == "approvals"
        return await super().get(collection, key)


async def test_taps_on_a_settled_card_are_refused_without_reading_the_store(tools: Tools, clock: ManualClock) -> None:
    store = CountingStore(clock=clock)
    assistant = make_assistant(tools, store)
    tg = RecordingTransport("telegram")
    assistant.attach(tg)
    await tg.say(assistant, ALICE, "/delete_note 3")
    card = tg.last(ALICE.id)
    await tg.tap(assistant, ALICE, card, "Confirm")
    assert tools.deleted == [3] and "Done" in card.text
    stale = card.__class__(card.chat_id, card.message_id, card.history[0])  # the card as it was, with buttons
    reads = store.reads
    for who in (ALICE, BOB, ALICE):
        await tg.tap(assistant, who, stale, "Confirm")
        await tg.tap(assistant, who, stale, "Cancel")
    assert store.reads == reads  # the settled record is known here: a settled state never changes
    assert tg.answers_to(ALICE)[-2:] == ["Already done.", "Already done."]
    assert tg.answers_to(BOB)[-2:] == ["Only Alice can confirm this.", "Only Alice can cancel this."]
    assert tools.deleted == [3]


async def test_paging_works_after_a_confirmation(tools: Tools, clock: ManualClock) -> None:
    tools = PagingTools()
    assistant = make_assistant(tools, MemoryStore(clock=clock))
    tg = RecordingTransport("telegram")
    assistant.attach(tg)
    await tg.say(assistant, ALICE, "/archive_notes")
    await tg.tap(assistant, ALICE, tg.last(ALICE.id), "Confirm")
    result = tg.last(ALICE.id)
    assert "note 1" in result.text and "note 11" not in result.text
    await tg.tap(assistant, ALICE, result, "Next")
    assert "no longer available" not in " ".join(tg.answers_to(ALICE))
    # the tool changes things: the next page is a call of its own, with a card of its own
    again = tg.last(ALICE.id)
    assert again is not result and "archive_notes" in again.text and "page" in again.text
    await tg.tap(assistant, ALICE, again, "Confirm")
    assert "note 11" in tg.last(ALICE.id).text


async def test_the_requester_withdraws_a_pending_verification(
    assistant: Assistant, tg: RecordingTransport, tools: Tools
) -> None:
    await tg.say(assistant, ALICE, "/pay ACME 12")
    group, mine = tg.last(APPROVERS_CHAT), tg.last(ALICE.id)
    await tg.tap(assistant, BOB, mine, "Withdraw")
    assert "Only Alice can withdraw" in tg.answers_to(BOB)[-1] and mine.buttons != ()
    await tg.tap(assistant, ALICE, mine, "Withdraw")
    assert tg.answers_to(ALICE)[-1] == "Withdrawn — nothing was done."
    for card in (group, mine):
        assert card.buttons == () and "Withdrawn by Alice" in card.text
    await tg.tap(assistant, MANAGER, group.__class__(group.chat_id, group.message_id, group.history[0]), "Approve")
    assert tools.paid == [] and tg.answers_to(MANAGER)[-1].startswith("Already cancelled")


async def test_cancelling_a_card_kills_its_token(assistant: Assistant, tg: RecordingTransport, tools: Tools) -> None:
    await tg.say(assistant, ALICE, "/delete_note 4")
    card = tg.last(ALICE.id)
    token = card.button("Confirm").ref
    await tg.tap(assistant, ALICE, card, "Cancel")
    alice = assistant.identities.context_for("telegram", ALICE, ALICE.id)
    replay = await assistant.registry.call("delete_note", {"confirm_token": token}, alice)
    assert not replay.success and replay.error == "Invalid or expired confirmation token" and tools.deleted == []
    assert "Cancelled" in card.text


async def test_cards_converge_after_the_platform_recovers(tools: Tools, clock: ManualClock) -> None:
    assistant = make_assistant(tools, MemoryStore(clock=clock))
    tg = FlakyEdits("telegram", failures=4)
    assistant.attach(tg)
    await tg.say(assistant, ALICE, "/pay ACME 13")
    group = tg.last(APPROVERS_CHAT)
    await tg.tap(assistant, MANAGER, group, "Approve")
    assert tools.paid == [("ACME", 13.0)]  # the state moved on while edits failed
    (approval,) = await assistant.approvals.listing()
    assert approval.state == "executed" and approval.effects()  # the cards are still owed
    assert approval.due is not None and approval.due >= clock.now + 5  # retry_after respected
    assert await assistant.sweep() == 0  # nothing due yet
    for _ in range(3):
        clock.now += 6
        await assistant.sweep()
    (approval,) = await assistant.approvals.listing()
    assert approval.effects() == [] and approval.due is None
    mine = tg.find(ALICE.id, approval.data["cards"][1]["message_id"])
    assert group.buttons == () and "Done" in group.text and mine.buttons == () and "Done" in mine.text


async def test_a_card_never_sent_is_sent_by_the_sweep(tools: Tools, clock: ManualClock) -> None:
    store = MemoryStore(clock=clock)
    crashed = make_assistant(tools, store)
    crashed.attach(RecordingTransport("telegram"))
    alice = crashed.identities.context_for("telegram", ALICE, ALICE.id)
    # the process that opened the approval died before delivering it (the record holds its cards)
    opened = await crashed.registry.call("pay", {"to": "ACME", "amount": 14}, alice)
    assert opened.success and opened.meta["approval_id"]
    survivor = make_assistant(tools, store)
    tg = RecordingTransport("telegram")
    survivor.attach(tg)
    assert await survivor.sweep() == 0  # within the hand-off time the opener may still deliver
    clock.now += 31
    assert await survivor.sweep() == 1
    group = tg.last(APPROVERS_CHAT)
    assert {b.action for b in group.buttons} == {"approve", "reject"}
    await tg.tap(survivor, MANAGER, group, "Approve")
    assert tools.paid == [("ACME", 14.0)] and "Paid" not in group.text and "Done" in group.text


async def test_a_lost_run_becomes_effect_uncertain_and_a_person_decides(tools: Tools, clock: ManualClock) -> None:
    store = MemoryStore(clock=clock)
    assistant = make_assistant(tools, store)
    tg = RecordingTransport("telegram")
    assistant.attach(tg)
    await tg.say(assistant, ALICE, "/pay ACME 15")
    group, mine = tg.last(APPROVERS_CHAT), tg.last(ALICE.id)
    manager = assistant.identities.context_for("telegram", MANAGER, APPROVERS_CHAT)
    change = await assistant.approvals.decide(group.button("Approve").ref, "approve", manager, follow=False)
    assert change.claimed  # ... and the worker that claimed the run died before running it
    clock.now += 301
    assert await assistant.sweep() == 1
    for card in (group, mine):
        assert "May not have run" in card.text and {b.action for b in card.buttons} == {"run_again", "mark_done"}
    assert "may or may not have taken effect" in tg.last(ALICE.id).text and tools.paid == []
    await tg.tap(assistant, BOB, group, "Run again")
    assert "Only the requester or an approver" in tg.answers_to(BOB)[-1] and tools.paid == []
    await tg.tap(assistant, MANAGER, group, "Run again")
    assert tools.paid == [("ACME", 15.0)] and "Done" in group.text and group.buttons == ()
    (approval,) = await assistant.approvals.listing()
    assert approval.state == "executed" and approval.attempt == 2


async def test_mark_as_done_settles_without_running(tools: Tools, clock: ManualClock) -> None:
    assistant = make_assistant(tools, MemoryStore(clock=clock))
    tg = RecordingTransport("telegram")
    assistant.attach(tg)
    await tg.say(assistant, ALICE, "/delete_note 6")
    card = tg.last(ALICE.id)
    alice = assistant.identities.context_for("telegram", ALICE, ALICE.id)
    await assistant.approvals.decide(card.button("Confirm").ref, "confirm", alice, follow=False)
    clock.now += 301
    await assistant.sweep()
    assert {b.action for b in card.buttons} == {"run_again", "mark_done"}
    await tg.tap(assistant, ALICE, card, "Mark as done")
    assert tools.deleted == [] and card.buttons == () and "Marked as done by Alice" in card.text


async def test_a_decision_from_the_command_line_is_carried_out_by_the_assistant(
    tools: Tools, clock: ManualClock, tmp_path: Any, capsys: Any
) -> None:
    from milpa_chat.cli import main
    from milpa_chat.store.sqlite import SqliteStore

    db = tmp_path / "bot.db"
    assistant = make_assistant(tools, SqliteStore(db, clock=clock))
    tg = RecordingTransport("telegram")
    assistant.attach(tg)
    await tg.say(assistant, ALICE, "/pay ACME 16")
    group = tg.last(APPROVERS_CHAT)
    request_id = group.button("Approve").ref
    import asyncio

    assert await asyncio.to_thread(main, ["approvals", "--store", str(db)]) == 0
    listed = capsys.readouterr().out
    assert request_id in listed and "pending" in listed and "pay" in listed and "0 of 1 approvals" in listed
    assert await asyncio.to_thread(main, ["decide", request_id, "approve", "--store", str(db)]) == 0
    assert "Approved." in capsys.readouterr().out and tools.paid == []  # the shell runs nothing itself
    assert await asyncio.to_thread(main, ["decide", request_id, "reject", "--store", str(db)]) == 1
    assert "already approved" in capsys.readouterr().out
    clock.now += 31  # the assistant's next sweep (any worker on the store) runs it and edits every card
    assert await assistant.sweep() == 1
    assert tools.paid == [("ACME", 16.0)]
    assert group.buttons == () and "Done" in group.text and "via the command line" in group.text
    await assistant.store.close()


async def test_the_card_shows_what_will_run_and_its_digest(
    assistant: Assistant, tg: RecordingTransport, tools: Tools
) -> None:
    await tg.say(assistant, ALICE, "/pay ACME 17.50")
    group = tg.last(APPROVERS_CHAT)
    (approval,) = await assistant.approvals.listing()
    assert approval.args == {"to": "ACME", "amount": 17.5}  # what runs: the validated arguments
    assert approval.data["digest"][:16] in group.text
    assert "On Approve: pay runs once with exactly these arguments (after validation), as Alice." in group.text
    await tg.tap(assistant, MANAGER, group, "Approve")
    assert tools.paid == [("ACME", 17.5)] and "On Approve" not in group.text


async def test_the_card_says_what_the_tool_can_do_from_what_it_declares(tools: Tools, clock: ManualClock) -> None:
    from milpa_chat.command import Externality, Mutates, Mutation, RegistryProjector, Reversibility, operation

    @operation("accounts:close", "Close a customer account.")
    @Mutates(Mutation.PERSISTENT, Externality.THIRD_PARTY, Reversibility.IRREVERSIBLE)
    class CloseAccount:
        def __init__(self, account: str) -> None:
            self.account = account

        def run(self) -> dict[str, str]:
            return {"closed": self.account}

    assistant = make_assistant(tools, MemoryStore(clock=clock))
    RegistryProjector(assistant.registry, resolve=lambda kind: None).register(CloseAccount)
    tg = RecordingTransport("telegram")
    assistant.attach(tg)
    await tg.say(assistant, BOB, "/accounts_close acme")
    card = tg.last(BOB.id)
    assert "Effect: changes persistent state, reaches third party, cannot be undone" in card.text
    await tg.say(assistant, ALICE, "/delete_note 2")
    assert "Effect: changes data" in tg.last(ALICE.id).text

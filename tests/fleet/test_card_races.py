"""Two workers delivering one card at once: whatever order the platform applies their edits in, every
copy ends up showing its record (what the fleet's chaos test found: a copy left on "Running" under a
record that said its outcome was shown)."""

from __future__ import annotations

import asyncio

import pytest

from milpa_chat import ToolResult
from milpa_chat.chat import Assistant
from milpa_chat.chat.inbound import MessageRef
from milpa_chat.renderers.model import Message
from milpa_chat.store import MemoryStore
from milpa_chat.testing.transport import RecordingTransport
from tests.chat.conftest import ALICE, APPROVERS_CHAT, MANAGER, Tools, make_assistant


class Clock:
    """The store's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


class Platform(RecordingTransport):
    """One chat platform both workers talk to; a new message can be held up (a slow ``sendMessage``)."""

    def __init__(self) -> None:
        super().__init__("telegram")
        self.hold: asyncio.Event | None = None
        self.held = asyncio.Event()

    async def send(self, chat_id: str, message: Message) -> MessageRef:
        if self.hold is not None:
            self.held.set()
            await self.hold.wait()
        return await super().send(chat_id, message)


def worker(tools: Tools, store: MemoryStore, platform: Platform) -> Assistant:
    assistant = make_assistant(tools, store)
    assistant.attach(platform)
    return assistant


@pytest.mark.parametrize("again", [True, False])
async def test_an_edit_that_lands_after_a_newer_one_is_done_again(again: bool) -> None:
    clock, tools = Clock(), Tools()
    store, platform = MemoryStore(clock=clock), Platform()
    a, b = worker(tools, store, platform), worker(tools, store, platform)
    await platform.say(a, ALICE, "/pay ACME 12")
    group = platform.last(APPROVERS_CHAT)
    manager = a.identities.context_for("telegram", MANAGER, APPROVERS_CHAT)
    claimed = await a.approvals.decide(group.button("Approve").ref, "approve", manager, follow=False)
    assert claimed.claimed and claimed.approval.state == "executing"
    done = await a.approvals.finish(claimed.approval, ToolResult.success({"paid": 12}, "Paid 12 EUR."), follow=False)
    # worker a shows the outcome: its card edits reach the platform, then the report to Alice is slow ...
    platform.hold = asyncio.Event()
    showing = asyncio.ensure_future(a.flows.outbox.deliver(done, again=again))
    await asyncio.wait_for(platform.held.wait(), 5)
    assert "Done" in group.text
    # ... meanwhile worker b, which read the record while it was running, edits the cards to "Running"
    # and records that; then worker a records that it showed the outcome
    await b.flows.outbox.deliver(claimed.approval)
    assert "Running" in group.text
    platform.hold.set()
    await showing
    if again:  # worker a sees that the two edits raced and edits the cards once more, from the record
        assert "Done" in group.text and "Running" not in group.text, group.text
    clock.now += 31  # past the hand-off time: any worker's sweep delivers what is still owed
    assert await b.sweep() == (0 if again else 1)
    record = await a.approvals.get(done.id)
    assert record is not None and record.state == "executed" and record.effects() == []
    mine = platform.find(ALICE.id, record.data["cards"][1]["message_id"])
    for card in (group, mine):
        assert "Done" in card.text and "Running" not in card.text and card.buttons == (), card.text


class FirstSendHeld(Platform):
    """The platform shows the first new message at once but answers its send (the message id) only when the test
    lets it (``release``); every other call goes through."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.first = True

    async def send(self, chat_id: str, message: Message) -> MessageRef:
        ref = await RecordingTransport.send(self, chat_id, message)
        if self.first:
            self.first = False
            self.held.set()
            await self.release.wait()
        return ref


async def test_a_decision_on_another_worker_while_a_card_is_sent_sends_no_second_copy() -> None:
    clock, tools = Clock(), Tools()
    store, platform = MemoryStore(clock=clock), FirstSendHeld()
    a, b = worker(tools, store, platform), worker(tools, store, platform)
    b.approvals.worker = "elsewhere:1:1"  # another process (on another host: never presumed dead)
    asking = asyncio.ensure_future(platform.say(a, ALICE, "/pay ACME 12"))
    await asyncio.wait_for(platform.held.wait(), 5)  # worker a's first card is on the platform, its id not back
    (pending,) = await b.approvals.listing()
    assert not any(c.get("message_id") for c in pending.data["cards"])
    manager = b.identities.context_for("telegram", MANAGER, APPROVERS_CHAT)
    decided = await b.approvals.decide(pending.id, "approve", manager)  # worker b decides, runs and delivers
    assert decided.claimed and tools.paid == [("ACME", 12.0)]
    shown = {chat: len(platform.in_chat(chat)) for chat in (APPROVERS_CHAT, ALICE.id)}
    platform.release.set()
    await asyncio.wait_for(asking, 5)
    record = await a.approvals.get(pending.id)
    assert record is not None and record.state == "executed"
    cards = [platform.find(c["chat_id"], c["message_id"]) for c in record.data["cards"]]
    print(f"\ncopies of the card each chat got, a decision on another worker during the send: {shown}")
    assert shown[APPROVERS_CHAT] == 1  # worker b sent no second copy of the card worker a was sending
    assert len([m for m in platform.in_chat(APPROVERS_CHAT) if "send_payment" in m.text or "pay" in m.text]) == 1
    for card in cards:  # worker a edited what it sent, once its ids were kept: every copy shows the outcome
        assert "Done" in card.text and card.buttons == (), card.text
    assert record.effects() == [] and tools.paid == [("ACME", 12.0)]

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

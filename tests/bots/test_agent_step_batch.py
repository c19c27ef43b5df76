"""The kit's own agent (``ChatAgent``) asking for several gated calls in one model step, through real
python-telegram-bot against the local Bot API server and the openai SDK against the local OpenAI server:
every request of the step is on one batch card at once, "Approve all" runs each once, and the model gets
one tool result per call, in its order, before its answer reaches the requester. Also: a free call beside
gated ones, a restart between the pause and the decision, and a redelivered decision that continues nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from milpa_chat import ToolRegistry, ToolResult, VerifyPolicy, tool
from milpa_chat.bots.telegram import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.chat.batching import Batching
from milpa_chat.gateway import ChatAgent, LlmService
from milpa_chat.gateway.chat_agent import STEPS
from milpa_chat.runtime.trail import AuditTrail
from milpa_chat.store.sqlite import SqliteStore
from milpa_chat.testing import BotApiServer, ManualClock, TelegramMessage, TelegramUser
from milpa_chat.testing.llm import FakeOpenAIServer, ScriptedToolCall

from ..gateway.agent_tools import tool_messages

ALICE = TelegramUser(1001, "Alice", "alice")  # asks the agent
MARIA = TelegramUser(2001, "Maria", "maria")  # approver
APPROVERS = -500
WAIT = 20.0
IDENTITIES: dict[str, Any] = {
    "roles": {"writer": ["notes:read", "notes:write"], "manager": ["notes:approve"]},
    "users": {"telegram:1001": ["writer"], "telegram:2001": ["manager"]},
    "approvers": {"telegram": [str(APPROVERS)]},
}


class Notes:
    """The outside system: what ran, how often (shared by both processes of the restart test)."""

    def __init__(self) -> None:
        self.runs: list[int] = []
        self.listed = 0

    @tool(
        "delete_note",
        "Delete a note",
        scopes=["notes:write"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("notes:approve",), expires_in=600, risk="low"),
    )
    async def delete_note(self, note_id: int) -> ToolResult:
        self.runs.append(note_id)
        if note_id == 7:
            return ToolResult.error("note 7 is locked by its owner")
        return ToolResult.success({"deleted": note_id}, f"Deleted note {note_id}.")

    @tool("list_notes", "List the notes", scopes=["notes:read"], mutating=False)
    async def list_notes(self) -> dict[str, Any]:
        self.listed += 1
        return {"notes": [1, 2, 3]}


@dataclass
class Bot:
    assistant: Assistant
    trail: AuditTrail
    store: SqliteStore


@asynccontextmanager
async def bot(tg: BotApiServer, oa: FakeOpenAIServer, notes: Notes, db: Path, clock: ManualClock) -> AsyncIterator[Bot]:
    """One bot process: its own store handle, registry, LLM client, agent, assistant and polling bot."""
    store = SqliteStore(db, clock=clock)
    registry = ToolRegistry(store=store)
    registry.scan(notes)
    trail = AuditTrail(store).attach(registry)
    async with LlmService(model="gpt-test", api_key=oa.api_key, base_url=oa.base_url, max_retries=0) as llm:
        assistant = Assistant(registry, Identities.from_dict(IDENTITIES), agent=ChatAgent(llm))
        Batching(assistant)
        telegram = TelegramBot(assistant, tg.token, tg.base_url, sweep_interval=None)
        await telegram.start(poll_timeout=1)
        try:
            yield Bot(assistant, trail, store)
        finally:
            await telegram.stop()
            await store.close()


@asynccontextmanager
async def servers() -> AsyncIterator[tuple[BotApiServer, FakeOpenAIServer]]:
    async with FakeOpenAIServer() as oa, BotApiServer() as tg:
        tg.group(APPROVERS, "Approvers", members=[MARIA])
        yield tg, oa


def cards(tg: BotApiServer) -> list[TelegramMessage]:
    return [m for m in tg.messages(APPROVERS) if m.button_labels]


def answer(tg: BotApiServer, text: str) -> TelegramMessage | None:
    """The agent's answer in Alice's chat (streamed there: under the plan's steps)."""
    return next((m for m in tg.messages(ALICE.id) if text in (m.text or "")), None)


async def test_twelve_deletions_in_one_step_one_batch_card_each_runs_once_and_the_model_gets_twelve_results(
    tmp_path: Path,
) -> None:
    notes, clock = Notes(), ManualClock()
    async with servers() as (tg, oa), bot(tg, oa, notes, tmp_path / "bot.db", clock) as b:
        oa.reply_tool_calls([ScriptedToolCall("delete_note", {"note_id": i}, f"d{i}") for i in range(1, 13)])
        oa.reply_text("Deleted 11 notes; note 7 is locked by its owner.")
        await tg.send_message(ALICE.id, ALICE, "delete my notes 1 to 12")
        card = await tg.wait_until(lambda: next(iter(cards(tg)), None), WAIT, what="the batch card")
        assert len(cards(tg)) == 1 and "12 requests from Alice" in (card.text or "")
        assert card.button_labels == ["✅ Approve all 12", "❌ Reject all 12", "One by one"]
        assert notes.runs == [] and len(oa.requests) == 1  # one model step, nothing ran, the model waits
        assert len(await b.store.scan(STEPS)) == 1  # the paused run, kept once for the whole step

        clock.advance(60)  # the table was read
        tap = await tg.tap_button(card, "✅ Approve all 12", MARIA)
        final = await tg.wait_until(
            lambda: answer(tg, "Deleted 11 notes; note 7 is locked by its owner."), WAIT, what="the agent's answer"
        )
        assert final is not None and tg.callback_query(tap).answer_text == "Approved 12 of 12."
        assert sorted(notes.runs) == list(range(1, 13))  # each ran once
        assert len(oa.requests) == 2  # the model was asked again once, after the last decision
        # Alice's chat: her copy of the batch card and the one answer (the eleven earlier decisions post nothing)
        assert len(tg.messages(ALICE.id)) == 2
        sent = tool_messages(oa.bodies[1])
        assert [cid for cid, _ in sent] == [f"d{i}" for i in range(1, 13)]  # one result per call, in its order
        results = dict(sent)
        assert results["d3"]["data"] == {"deleted": 3} and results["d12"]["data"] == {"deleted": 12}
        assert results["d7"]["success"] is False and "note 7 is locked" in results["d7"]["error"]
        decided = [e for e in await b.trail.entries() if e.kind == "decided"]
        assert len(decided) == 12 and (await b.trail.verify()).ok
        assert await b.store.scan(STEPS) == []  # the step is done: nothing left to continue

        # a decision delivered again (a worker that crashed before recording it) continues nothing
        approvals = [a for a in await b.assistant.approvals.listing() if a.tool == "delete_note"]
        await b.assistant.resume_agent(approvals[0], ToolResult.success({"deleted": 1}))
        await b.assistant.resume_agent(approvals[-1], None)
        assert len(oa.requests) == 2 and sorted(notes.runs) == list(range(1, 13))
        assert sum(final.text == m.text for m in tg.messages(ALICE.id)) == 1
    print(f"\n12 gated calls in one model step: {len(decided)} decided, 1 tap, {len(oa.requests)} model requests")


async def test_two_gated_and_one_free_call_the_free_one_runs_now_and_rejections_go_back_in_order(
    tmp_path: Path,
) -> None:
    notes, clock = Notes(), ManualClock()
    async with servers() as (tg, oa), bot(tg, oa, notes, tmp_path / "bot.db", clock) as b:
        oa.reply_tool_calls(
            [
                ScriptedToolCall("delete_note", {"note_id": 1}, "a"),
                ScriptedToolCall("list_notes", {}, "l"),
                ScriptedToolCall("delete_note", {"note_id": 2}, "b"),
            ]
        )
        oa.reply_text("Maria rejected both deletions; your notes are 1, 2 and 3.")
        await tg.send_message(ALICE.id, ALICE, "delete notes 1 and 2, then list them")
        card = await tg.wait_until(lambda: next(iter(cards(tg)), None), WAIT, what="the batch card")
        assert "2 requests from Alice" in (card.text or "") and notes.listed == 1 and notes.runs == []
        clock.advance(60)
        await tg.tap_button(card, "❌ Reject all 2", MARIA)
        await tg.wait_until(
            lambda: answer(tg, "Maria rejected both deletions; your notes are 1, 2 and 3."),
            WAIT,
            what="the agent's answer",
        )
        assert notes.runs == [] and notes.listed == 1 and len(oa.requests) == 2
        sent = tool_messages(oa.bodies[1])
        assert [cid for cid, _ in sent] == ["a", "l", "b"]
        results = dict(sent)
        assert results["l"]["data"] == {"notes": [1, 2, 3]}
        for cid in ("a", "b"):
            assert results[cid]["decision"] == "rejected" and "Maria" in results[cid]["error"]
        assert await b.store.scan(STEPS) == []


async def test_the_paused_step_survives_a_restart_and_the_new_process_continues_it_once(tmp_path: Path) -> None:
    notes, clock, db = Notes(), ManualClock(), tmp_path / "bot.db"
    async with servers() as (tg, oa):
        oa.reply_tool_calls([ScriptedToolCall("delete_note", {"note_id": i}, f"d{i}") for i in (1, 2, 3)])
        oa.reply_text("Deleted notes 1, 2 and 3.")
        async with bot(tg, oa, notes, db, clock):
            await tg.send_message(ALICE.id, ALICE, "delete notes 1 to 3")
            card = await tg.wait_until(lambda: next(iter(cards(tg)), None), WAIT, what="the batch card")
        # the first process is gone; a new one over the same file gets the tap
        async with bot(tg, oa, notes, db, clock) as b:
            assert len(await b.store.scan(STEPS)) == 1
            clock.advance(60)
            await tg.tap_button(card, "✅ Approve all 3", MARIA)
            await tg.wait_until(lambda: answer(tg, "Deleted notes 1, 2 and 3."), WAIT, what="the agent's answer")
            assert sorted(notes.runs) == [1, 2, 3] and len(oa.requests) == 2
            assert [cid for cid, _ in tool_messages(oa.bodies[1])] == ["d1", "d2", "d3"]
            assert await b.store.scan(STEPS) == []

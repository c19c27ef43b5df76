"""Approving at scale, through real python-telegram-bot and slack-bolt (and the openai SDK for the agent) against the
kit's local servers: an agent turn proposing 12 deletions yields one batch card, "Approve all" runs each once; a
high-risk request leaves the batch; reassign, ask the requester, comment; forged and model-made attempts refused."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import openai

from milpa_chat import ToolRegistry, ToolResult, VerifyPolicy, tool
from milpa_chat.bots.slack import SlackBot
from milpa_chat.bots.telegram import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.chat.batching import Batching
from milpa_chat.chat.inbound import Inbound
from milpa_chat.runtime.approval import ApprovalRefused
from milpa_chat.runtime.approval_stats import approver_stats
from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.trail import AuditTrail
from milpa_chat.store import MemoryStore
from milpa_chat.testing import BotApiServer, ManualClock, TelegramMessage, TelegramUser
from milpa_chat.testing.llm import FakeOpenAIServer
from milpa_chat.testing.slack import SlackApiServer, SlackEvents, serve_bolt_app

from .conftest_slack import APPROVERS, SECRET, TEAM, TOKEN, WORK, button

ALICE = TelegramUser(1001, "Alice", "alice")  # asks (through the agent)
MARIA = TelegramUser(2001, "Maria", "maria")  # approver
BOB = TelegramUser(1002, "Bob", "bob")  # approver and lead
MATEO = "U2002"  # approver on Slack
EVE = TelegramUser(9999, "Eve", "eve")  # in the approvers' group, without the scope
TG_APPROVERS = -500
WAIT = 15.0
IDENTITIES: dict[str, Any] = {
    "roles": {"writer": ["notes:write"], "manager": ["notes:approve"], "lead": ["notes:lead"]},
    "users": {
        "telegram:1001": ["writer"],
        "telegram:2001": ["manager"],
        "telegram:1002": ["manager", "lead"],
        f"slack:{TEAM}:{MATEO}": ["manager"],
    },
    "approvers": {"telegram": [str(TG_APPROVERS)], "slack": [APPROVERS]},
}
NOTES = VerifyPolicy(approver_scopes=("notes:approve",), expires_in=600, risk="low")


class Notes:
    def __init__(self) -> None:
        self.runs: list[int] = []
        self.purged = 0

    @tool("delete_note", "Delete a note", scopes=["notes:write"], mutating=True, verify=NOTES)
    async def delete_note(self, note_id: int) -> ToolResult:
        self.runs.append(note_id)
        if note_id == 7:
            return ToolResult.error("note 7 is locked by its owner")
        return ToolResult.success({"deleted": note_id}, f"Deleted note {note_id}.")

    @tool(
        "purge_notes",
        "Delete every note",
        scopes=["notes:write"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("notes:approve",), expires_in=600, risk="high"),
    )
    async def purge_notes(self) -> str:
        self.purged += 1
        return "Purged."


TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("delete_note", "purge_notes")
]


@dataclass
class World:
    tg: BotApiServer
    api: SlackApiServer
    slack: SlackEvents
    slack_bot: SlackBot
    llm: FakeOpenAIServer
    notes: Notes
    assistant: Assistant
    trail: AuditTrail
    clock: ManualClock
    batching: Batching | None
    told: list[str] = field(default_factory=list)

    def now(self, message: TelegramMessage) -> TelegramMessage:
        return self.tg.message(message.chat.id, message.message_id)

    def bot_messages(self) -> int:
        """Messages the bot posted: Telegram (the requester's chat, the approvers' group) and Slack."""
        tg = sum(len(self.tg.messages(c)) for c in (ALICE.id, TG_APPROVERS))
        return tg + len(self.api.messages(APPROVERS))


@asynccontextmanager
async def world(*, batching: bool = True, fast_min: int = 5) -> AsyncIterator[World]:
    clock = ManualClock()
    store = MemoryStore(clock=clock)
    registry = ToolRegistry(store=store)
    notes = Notes()
    registry.scan(notes)
    trail = AuditTrail(store).attach(registry)
    async with (
        FakeOpenAIServer() as llm,
        BotApiServer() as tg,
        SlackApiServer(TOKEN, team_id=TEAM, channels=[WORK, APPROVERS]) as api,
    ):
        client = openai.AsyncOpenAI(base_url=llm.base_url, api_key=llm.api_key, max_retries=0)

        async def agent(inbound: Inbound, ctx: ToolContext) -> str:
            """One turn: the model proposes calls; each runs through the registry as the person, by the model."""
            reply = await client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": inbound.text or ""}],
                tools=TOOLS,  # type: ignore[arg-type]
            )
            calls = reply.choices[0].message.tool_calls or []
            for call in calls:
                name = call.function.name  # type: ignore[union-attr]
                result = await registry.call(name, json.loads(call.function.arguments or "{}"), ctx.as_model())  # type: ignore[union-attr]
                await assistant.open_approval(inbound, name, result)
            return f"I asked for approval of {len(calls)} call(s)."

        assistant = Assistant(registry, Identities.from_dict(IDENTITIES), agent=agent, risk_tiers=True)
        at_scale = Batching(assistant, fast_min=fast_min) if batching else None
        api.add_user(MATEO, "mateo", real_name="Mateo")
        tg.group(TG_APPROVERS, "Approvers", members=[MARIA, BOB, EVE])
        telegram_bot = TelegramBot(assistant, tg.token, tg.base_url, sweep_interval=None)
        slack_bot = SlackBot(assistant, TOKEN, SECRET, api.base_url)
        await telegram_bot.start(poll_timeout=1)
        try:
            async with serve_bolt_app(slack_bot.web_app()) as url, SlackEvents(url, SECRET, api=api) as slack:
                yield World(tg, api, slack, slack_bot, llm, notes, assistant, trail, clock, at_scale)
        finally:
            await telegram_bot.stop()
            await client.close()


def twelve_deletions(w: World, *, with_purge: bool = False) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [("delete_note", {"note_id": i}) for i in range(1, 13)]
    if with_purge:
        calls.append(("purge_notes", {}))
    w.llm.reply_tool_calls(calls)


async def ask_agent(w: World) -> TelegramMessage:
    """Alice asks the agent; returns the bot's answer in her chat (the turn is over then)."""
    before = len(w.tg.messages(ALICE.id))
    await w.tg.send_message(ALICE.id, ALICE, "clean up my notes")
    return await w.tg.wait_until(
        lambda: next((m for m in w.tg.messages(ALICE.id)[before:] if "I asked for approval" in (m.text or "")), None),
        WAIT,
        what="the agent's answer",
    )


def cards_in_group(w: World) -> list[TelegramMessage]:
    return [m for m in w.tg.messages(TG_APPROVERS) if m.button_labels]


async def test_twelve_deletions_one_batch_card_one_tap_each_runs_once_and_reports_its_own_result() -> None:
    # before: the same turn without batching is 12 cards per approver chat and 12 taps
    async with world(batching=False) as w:
        twelve_deletions(w)
        await ask_agent(w)
        await w.tg.wait_until(lambda: len(cards_in_group(w)) == 12, WAIT, what="12 approval cards")
        await w.api.wait_for(lambda: len(w.api.messages(APPROVERS)) == 12)
        taps_before, singles = 0, cards_in_group(w)
        for card in singles:
            await w.tg.tap_button(card, "✅ Approve", MARIA)
            taps_before += 1
        await w.tg.wait_until(lambda: len(w.notes.runs) == 12, WAIT, what="12 runs")
        await w.tg.wait_until(lambda: sum("Done" in (w.now(c).text or "") for c in singles) == 11, WAIT)
        messages_before = w.bot_messages()

    async with world() as w:
        twelve_deletions(w)
        await ask_agent(w)
        tg_card = await w.tg.wait_until(lambda: next(iter(cards_in_group(w)), None), WAIT, what="the batch card")
        slack_card = await w.api.wait_for(lambda: next(iter(w.api.messages(APPROVERS)), None))
        assert len(cards_in_group(w)) == 1 and len(w.api.messages(APPROVERS)) == 1
        text = tg_card.text or ""
        assert "12 requests from Alice" in text and "delete_note" in text and '"note_id": 12' in text
        assert [b for b in tg_card.button_labels] == ["✅ Approve all 12", "❌ Reject all 12", "One by one"]
        assert "Approve all 12" in json.dumps(slack_card.buttons())

        w.clock.advance(60)  # the table was read
        tap = await w.tg.tap_button(tg_card, "✅ Approve all 12", MARIA)
        await w.tg.wait_until(lambda: w.tg.callback_query(tap).answered, WAIT, what="the tap's answer")
        assert w.tg.callback_query(tap).answer_text == "Approved 12 of 12."
        await w.tg.wait_until(lambda: "note 7 is locked" in (w.now(tg_card).text or ""), WAIT, what="the outcomes")
        assert sorted(w.notes.runs) == list(range(1, 13))  # each ran once
        shown = w.now(tg_card).text or ""
        assert "Deleted note 12." in shown and "Approved by Maria from this card: 12 of 12." in shown
        assert not w.now(tg_card).button_labels  # nothing left to decide
        await w.api.wait_for(lambda: "note 7 is locked" in w.api.messages(APPROVERS)[0].all_text())
        (requester_copy,) = [m for m in w.tg.messages(ALICE.id) if "12 requests" in (m.text or "")]
        await w.tg.wait_until(lambda: "note 7 is locked" in (w.now(requester_copy).text or ""), WAIT)

        entries = await w.trail.entries()
        decided = [e for e in entries if e.kind == "decided"]
        assert len(decided) == 12 and all(e.fields["via"] == "telegram/batch" for e in decided)
        assert len([e for e in entries if e.kind == "started"]) == 12
        assert (await w.trail.verify()).ok
        assert await w.assistant.store.scan("standing_grants") == []  # a batch never creates a grant
        stats = {s.principal: s for s in approver_stats(await w.assistant.approvals.listing())}
        assert stats["telegram:2001"].batched == 12
        messages_after = w.bot_messages()
        taps_after = 1
    print(
        f"\n12 deletions of one agent turn: before {taps_before} taps, {messages_before} bot messages; "
        f"after (one batch card) {taps_after} tap, {messages_after} bot messages"
    )
    assert taps_after < taps_before and messages_after < messages_before


async def test_a_high_risk_request_leaves_the_batch_and_asks_on_its_own_card() -> None:
    async with world() as w:
        twelve_deletions(w, with_purge=True)
        await ask_agent(w)
        await w.tg.wait_until(lambda: len(cards_in_group(w)) == 2, WAIT, what="a batch card and the purge's own card")
        batch_card, own = sorted(cards_in_group(w), key=lambda m: "12 requests" not in (m.text or ""))
        assert "12 requests from Alice" in (batch_card.text or "") and "purge_notes" not in (batch_card.text or "")
        assert "purge_notes" in (own.text or "") and "High risk" in (own.text or "")
        w.clock.advance(60)
        await w.tg.tap_button(batch_card, "✅ Approve all 12", MARIA)
        await w.tg.wait_until(lambda: len(w.notes.runs) == 12, WAIT, what="12 runs")
        assert w.notes.purged == 0  # the high-risk request still waits for its own decision, with a reason
        assert "✅ Approve" in " ".join(w.now(own).button_labels)


async def test_one_by_one_splits_the_batch_into_its_own_cards() -> None:
    async with world() as w:
        w.llm.reply_tool_calls([("delete_note", {"note_id": i}) for i in (1, 2, 3)])
        await ask_agent(w)
        card = await w.tg.wait_until(lambda: next(iter(cards_in_group(w)), None), WAIT, what="the batch card")
        await w.tg.tap_button(card, "One by one", MARIA)
        await w.tg.wait_until(lambda: "Split" in (w.now(card).text or ""), WAIT, what="the batch card split")
        assert not w.now(card).button_labels and len(cards_in_group(w)) == 3  # three cards of their own
        one = next(c for c in cards_in_group(w) if "delete_note" in (c.text or "") and c is not card)
        w.clock.advance(30)
        await w.tg.tap_button(one, "✅ Approve", MARIA)
        await w.tg.wait_until(lambda: len(w.notes.runs) == 1, WAIT, what="one run")


async def test_a_batch_is_refused_to_someone_whose_approvals_come_too_fast() -> None:
    async with world(fast_min=3) as w:
        # Maria approved three single requests the moment they appeared (the clock did not move)
        alice = w.assistant.identities.context_for("telegram", _user(ALICE), str(ALICE.id))
        maria = w.assistant.identities.context_for("telegram", _user(MARIA), str(TG_APPROVERS))
        for i in range(3):
            asked = await w.assistant.registry.call("delete_note", {"note_id": 20 + i}, alice)
            await w.assistant.approvals.decide(asked.meta["approval_id"], "approve", maria, via="telegram")
        assert len(w.notes.runs) == 3
        twelve_deletions(w)
        await ask_agent(w)
        card = await w.tg.wait_until(
            lambda: next((m for m in cards_in_group(w) if "12 requests" in (m.text or "")), None), what="the batch"
        )
        tap = await w.tg.tap_button(card, "✅ Approve all 12", MARIA)
        await w.tg.wait_until(lambda: w.tg.callback_query(tap).answered)
        assert "faster than their cards can be read" in (w.tg.callback_query(tap).answer_text or "")
        assert len(w.notes.runs) == 3 and "Approve all 12" in " ".join(w.now(card).button_labels)
        # someone else, who reads before deciding, may
        w.clock.advance(60)
        await w.tg.tap_button(w.now(card), "✅ Approve all 12", BOB)
        await w.tg.wait_until(lambda: len(w.notes.runs) == 15, WAIT, what="the batch's runs")


async def test_reassign_ask_answer_and_comment_show_on_every_copy_and_in_the_trail() -> None:
    async with world() as w:
        w.llm.reply_tool_calls([("delete_note", {"note_id": 5})])
        await ask_agent(w)
        card = await w.tg.wait_until(lambda: next(iter(cards_in_group(w)), None), WAIT, what="the card")
        await cards_recorded(w)
        slack_card = await w.api.wait_for(lambda: next(iter(w.api.messages(APPROVERS)), None))
        ref = next(word for word in (card.text or "").split() if len(word) == 9 and word.endswith(":"))[:-1]

        # Maria asks Alice a question; it reaches Alice's chat; her answer shows on every copy
        assert "Asked Alice" in await say(w, TG_APPROVERS, MARIA, f"/ask {ref} is note 5 the draft?")
        question = await w.tg.wait_until(
            lambda: next((m for m in w.tg.messages(ALICE.id) if (m.text or "").startswith("Maria asks")), None), WAIT
        )
        assert f"/answer {ref}" in (question.text or "")
        # only the requester answers
        assert "Only Alice" in await say(w, TG_APPROVERS, BOB, f"/answer {ref} yes")
        assert "answer is on" in await say(w, ALICE.id, ALICE, f"/answer {ref} yes, the old draft")

        await w.tg.wait_until(lambda: "Alice answered: yes, the old draft" in (w.now(card).text or ""))
        await w.api.wait_for(lambda: "yes, the old draft" in w.api.messages(APPROVERS)[0].all_text())
        assert "Maria asked: is note 5 the draft?" in slack_card.all_text()

        # a comment from the approvers' group shows on every copy
        assert "Comment added" in await say(w, TG_APPROVERS, BOB, f"/comment {ref} fine by me")
        await w.tg.wait_until(lambda: "Bob: fine by me" in (w.now(card).text or ""))

        # reassigned to the leads: Maria (no notes:lead) is refused, Bob (a lead) decides
        assert "Reassigned" in await say(w, TG_APPROVERS, MARIA, f"/reassign {ref} scope:notes:lead")
        await w.tg.wait_until(lambda: "reassigned to the notes:lead group" in (w.now(card).text or ""))
        w.clock.advance(30)
        refused = await w.tg.tap_button(w.now(card), "✅ Approve", MARIA)
        await w.tg.wait_until(lambda: w.tg.callback_query(refused).answered)
        assert "reassigned it to the notes:lead group" in (w.tg.callback_query(refused).answer_text or "")
        assert w.notes.runs == []
        await w.slack.click(slack_card, button(slack_card, "Approve")["action_id"], user=MATEO)
        await w.slack_bot.drain()
        assert "reassigned it" in w.api.ephemeral_messages(MATEO)[-1].text and w.notes.runs == []
        await w.tg.tap_button(w.now(card), "✅ Approve", BOB)
        await w.tg.wait_until(lambda: w.notes.runs == [5], WAIT, what="the run")

        kinds = [e.kind for e in await w.trail.entries()]
        for kind in ("asked", "answered", "commented", "reassigned", "decided"):
            assert kind in kinds, kinds
        assert (await w.trail.verify()).ok


async def test_forged_batch_taps_and_a_model_made_context_decide_nothing() -> None:
    async with world() as w:
        w.llm.reply_tool_calls([("delete_note", {"note_id": i}) for i in (1, 2, 3)])
        await ask_agent(w)
        card = await w.tg.wait_until(lambda: next(iter(cards_in_group(w)), None), WAIT, what="the batch card")
        batching = w.batching
        assert batching is not None
        (batch,) = [r for r in await w.assistant.store.scan("approval_batches")]
        answers = []
        # forged data on the card (another id), on the requester's message, by someone without the scope
        answers.append(await _tap_data(w, card, "batch_approve:" + "0" * 24, MARIA))
        answers.append(await _tap_data(w, card, "batch_approve:" + batch.key[:-1] + "x", MARIA))
        alice_msg = await w.tg.wait_until(  # the requester's copy may be sent just after the approvers' card
            lambda: next((m for m in w.tg.messages(ALICE.id) if "3 requests" in (m.text or "")), None),
            WAIT,
            what="the requester's copy of the batch card",
        )
        answers.append(await _tap_data(w, alice_msg, f"batch_approve:{batch.key}", MARIA))
        w.clock.advance(30)
        answers.append(await _tap_data(w, card, f"batch_approve:{batch.key}", EVE))
        # the requester taps Approve all on the approvers' card: refused per item (not an approver)
        answers.append(await _tap_data(w, card, f"batch_approve:{batch.key}", ALICE))
        print("\nforged / unauthorized batch taps ->", answers)
        assert w.notes.runs == [] and all(answers)
        assert all("needs one of these scopes" in a for a in answers[3:])

        # a model-made context: batch, reassign, ask, comment are all refused
        model = w.assistant.identities.context_for("telegram", _user(MARIA), str(TG_APPROVERS)).as_model()
        pending = [r.key for r in await w.assistant.store.scan("approvals")]
        refused = 0
        for attempt in (
            lambda: batching.batches.decide(batch.key, "approve", model, via="telegram"),
            lambda: batching.batches.split(batch.key, model),
            lambda: batching.batches.open(pending, model),
            lambda: batching.actions.reassign(pending[0], "telegram:1002", model),
            lambda: batching.actions.ask(pending[0], "why?", model),
            lambda: batching.actions.comment(pending[0], "ok", model),
            lambda: batching.modes.set(model, "no confirmation for reads for 1 hour"),  # type: ignore[union-attr]
        ):
            try:
                await attempt()
            except ApprovalRefused as exc:
                assert "A model cannot" in str(exc)
                refused += 1
        print(f"7 model-made batch/split/reassign/ask/comment/mode attempts -> {refused} refused")
        assert refused == 7 and w.notes.runs == []
        entries = await w.trail.entries()
        assert sum(1 for e in entries if e.kind == "refused" and e.fields.get("by_model")) == 7
        assert all(r.value["state"] == "pending" for r in await w.assistant.store.scan("approvals"))


async def cards_recorded(w: World) -> None:
    """Wait until every card sent so far is recorded on its request (a person acts after seeing it)."""
    for _ in range(int(WAIT / 0.05)):
        records = await w.assistant.store.scan("approvals")
        if all(c.get("message_id") for r in records for c in r.value["cards"]):
            return
        await asyncio.sleep(0.05)
    raise TimeoutError("cards not recorded")


async def say(w: World, chat: int, user: TelegramUser, text: str) -> str:
    """``user`` writes ``text`` in ``chat``; the text of the bot's next message there without buttons."""
    before = len(w.tg.messages(chat))
    await w.tg.send_message(chat, user, text)
    found = await w.tg.wait_until(
        lambda: next((m for m in w.tg.messages(chat)[before:] if not m.button_labels and m.text), None), WAIT
    )
    return found.text or ""


def _user(u: TelegramUser) -> Any:
    from milpa_chat.chat.inbound import ChatUser

    return ChatUser(str(u.id), u.first_name, u.username)


async def _tap_data(w: World, message: TelegramMessage, data: str, user: TelegramUser) -> str:
    update = await w.tg.tap(message.chat.id, message.message_id, user, data)
    query = w.tg.callback_query(update)
    await w.tg.wait_until(lambda: query.answered, WAIT, what="the tap's answer")
    return query.answer_text or ""


async def test_reject_all_from_slack_rejects_each_item_and_every_copy_shows_it() -> None:
    async with world() as w:
        w.llm.reply_tool_calls([("delete_note", {"note_id": i}) for i in (1, 2, 3, 4)])
        await ask_agent(w)
        tg_card = await w.tg.wait_until(lambda: next(iter(cards_in_group(w)), None), WAIT, what="the batch card")
        slack_card = await w.api.wait_for(lambda: next(iter(w.api.messages(APPROVERS)), None))
        await w.api.wait_for(lambda: "Reject all 4" in json.dumps(slack_card.buttons()))
        await w.slack.click(slack_card, button(slack_card, "Reject all 4")["action_id"], user=MATEO)
        await w.slack_bot.drain()
        await w.tg.wait_until(lambda: "Rejected by Mateo from this card: 4 of 4." in (w.now(tg_card).text or ""), WAIT)
        assert "Rejected by Mateo" in w.api.messages(APPROVERS)[0].all_text()
        assert w.notes.runs == []
        states = [r.value["state"] for r in await w.assistant.store.scan("approvals")]
        assert states == ["rejected"] * 4
        decided = [e for e in await w.trail.entries() if e.kind == "decided"]
        assert len(decided) == 4 and {e.fields["via"] for e in decided} == {"slack/batch"}

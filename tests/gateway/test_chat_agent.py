"""ChatAgent inside an Assistant: free text to the agent, approval cards that resume it, history, errors."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from milpa_chat.chat import Assistant, ChatUser, Identities
from milpa_chat.gateway import ChatAgent, LlmService
from milpa_chat.store import MemoryStore
from milpa_chat.store.sqlite import SqliteStore
from milpa_chat.testing import ManualClock
from milpa_chat.testing.llm import FakeOpenAIServer, ScriptedToolCall
from milpa_chat.testing.transport import RecordingTransport

from .agent_tools import Notes, registry_with, tool_messages, tool_names
from .conftest import FakeServer

ALICE = ChatUser("1001", "Alice", "alice")
MARIA = ChatUser("2001", "Maria", "maria")
APPROVERS = "-500"
IDENTITIES = {
    "roles": {"writer": ["notes:read", "notes:write", "payments:send"], "manager": ["notes:read", "payments:approve"]},
    "users": {"telegram:1001": ["writer"], "telegram:2001": ["manager"]},
    "approvers": {"telegram": [APPROVERS]},
}
MakeLlm = Callable[..., LlmService]


def make_bot(llm: LlmService, notes: Notes, store: Any, **options: Any) -> tuple[Assistant, ChatAgent]:
    agent = ChatAgent(llm, **options)
    assistant = Assistant(registry_with(notes, store), Identities.from_dict(IDENTITIES), agent=agent)
    return assistant, agent


@pytest.fixture
def notes() -> Notes:
    return Notes()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def oa() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
async def oa_llm(oa: FakeOpenAIServer) -> AsyncIterator[LlmService]:
    async with LlmService(
        model="gpt-test", api_key=oa.api_key, base_url=oa.base_url, max_retries=0, timeout=5
    ) as service:
        yield service


@pytest.fixture
def bot(oa_llm: LlmService, notes: Notes, clock: ManualClock) -> tuple[Assistant, ChatAgent, RecordingTransport]:
    assistant, agent = make_bot(oa_llm, notes, MemoryStore(clock=clock))
    tg = RecordingTransport("telegram")
    assistant.attach(tg)
    return assistant, agent, tg


Bot = tuple[Assistant, ChatAgent, RecordingTransport]


async def test_confirm_pause_button_resume(
    server: FakeServer, make_llm: MakeLlm, notes: Notes, clock: ManualClock
) -> None:
    assistant, agent = make_bot(make_llm(), notes, MemoryStore(clock=clock))
    tg = RecordingTransport("telegram")
    assistant.attach(tg)
    server.reply_tool_call("delete_note", {"note_id": 2}, id="d").reply_text("Deleted note 2 (eggs).")
    await tg.say(assistant, ALICE, "please delete the eggs note")
    card = tg.last(ALICE.id)
    assert {b.action for b in card.buttons} == {"confirm", "cancel"} and notes.deleted == []
    (approval,) = await assistant.approvals.listing(state="pending")
    assert approval.data["resume"]["state"]["pending"]["call"]["name"] == "delete_note"
    assert await agent.history("telegram", ALICE.id) == []  # nothing is kept until the turn is over

    await tg.tap(assistant, ALICE, card, "Confirm")
    assert notes.deleted == [2] and card.buttons == ()
    assert tg.last(ALICE.id).text == "Deleted note 2 (eggs)."
    assert dict(tool_messages(server.bodies[1]))["d"]["data"] == {"deleted": 2}
    history = await agent.history("telegram", ALICE.id)
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant"]

    server.reply_text("You're welcome.")
    await tg.say(assistant, ALICE, "thanks")
    sent = server.bodies[2]
    assert "please delete the eggs note" in str(sent["messages"]) and tg.last(ALICE.id).text == "You're welcome."


async def test_cancel_goes_back_to_the_model_and_never_runs(bot: Bot, oa: FakeOpenAIServer, notes: Notes) -> None:
    assistant, _, tg = bot
    oa.reply_tool_call("delete_note", {"note_id": 1}, id="d").reply_text("Fine, note 1 stays.")
    await tg.say(assistant, ALICE, "delete note 1")
    await tg.tap(assistant, ALICE, tg.last(ALICE.id), "Cancel")
    assert notes.deleted == [] and tg.last(ALICE.id).text == "Fine, note 1 stays."
    told = dict(tool_messages(oa.bodies[1]))["d"]
    assert told["decision"] == "cancelled" and "Alice cancelled this call; it was not run" in told["error"]


async def test_verification_rejected_and_approved(bot: Bot, oa: FakeOpenAIServer, notes: Notes) -> None:
    assistant, _, tg = bot
    oa.reply_tool_call("pay", {"to": "ACME", "amount": 40}, id="p1").reply_text("Maria rejected the payment.")
    await tg.say(assistant, ALICE, "pay ACME 40")
    await tg.tap(assistant, MARIA, tg.last(APPROVERS), "Reject")
    assert notes.paid == [] and tg.last(ALICE.id).text == "Maria rejected the payment."
    told = dict(tool_messages(oa.bodies[1]))["p1"]
    assert told["decision"] == "rejected" and "Maria" in told["error"]

    oa.reply_tool_call("pay", {"to": "ACME", "amount": 40}, id="p2").reply_text("Paid ACME 40.")
    await tg.say(assistant, ALICE, "try again please")
    await tg.tap(assistant, MARIA, tg.last(APPROVERS), "Approve")
    assert notes.paid == [("ACME", 40.0)] and tg.last(ALICE.id).text == "Paid ACME 40."
    assert "resolve_verification" not in tool_names(oa.bodies[0])  # approving is for people


async def test_expiry_goes_back_to_the_model(bot: Bot, oa: FakeOpenAIServer, notes: Notes, clock: ManualClock) -> None:
    assistant, _, tg = bot
    oa.reply_tool_call("delete_note", {"note_id": 3}, id="d").reply_text("The request expired; nothing changed.")
    await tg.say(assistant, ALICE, "delete note 3")
    card = tg.last(ALICE.id)
    clock.now += 3600
    assert await assistant.sweep() == 1
    assert tg.last(ALICE.id).text == "The request expired; nothing changed." and notes.deleted == []
    assert dict(tool_messages(oa.bodies[1]))["d"]["decision"] == "expired"
    stale = card.__class__(card.chat_id, card.message_id, card.history[0])  # a late tap on the old card
    await tg.tap(assistant, ALICE, stale, "Confirm")
    assert notes.deleted == [] and len(oa.requests) == 2 and "expired" in tg.answers_to(ALICE)[-1]


async def test_two_confirmations_in_one_step_are_asked_at_once(bot: Bot, oa: FakeOpenAIServer, notes: Notes) -> None:
    assistant, _, tg = bot
    oa.reply_tool_calls(
        [ScriptedToolCall("delete_note", {"note_id": 1}, "a"), ScriptedToolCall("delete_note", {"note_id": 3}, "b")]
    )
    oa.reply_text("Deleted notes 1 and 3.")
    await tg.say(assistant, ALICE, "delete notes 1 and 3")
    first, second = [m for m in tg.in_chat(ALICE.id) if m.buttons]  # both asked now, not one after the other
    await tg.tap(assistant, ALICE, first, "Confirm")
    assert notes.deleted == [1] and len(oa.requests) == 1  # the model waits for the whole step
    await tg.tap(assistant, ALICE, second, "Confirm")
    assert notes.deleted == [1, 3] and tg.last(ALICE.id).text == "Deleted notes 1 and 3."
    assert list(dict(tool_messages(oa.bodies[1]))) == ["a", "b"] and len(oa.requests) == 2


async def test_restart_between_pause_and_decision(
    oa: FakeOpenAIServer, notes: Notes, clock: ManualClock, tmp_path: Path
) -> None:
    db = str(tmp_path / "bot.db")
    oa.reply_tool_call("delete_note", {"note_id": 2}, id="d").reply_text("Done: note 2 is gone.")
    llm = LlmService(model="gpt-test", api_key=oa.api_key, base_url=oa.base_url, max_retries=0)
    first, _ = make_bot(llm, notes, SqliteStore(db, clock=clock))
    tg = RecordingTransport("telegram")
    first.attach(tg)
    await tg.say(first, ALICE, "delete note 2")
    card = tg.last(ALICE.id)
    await first.store.close()
    await llm.aclose()
    # a new process: new LLM client, registry, agent and assistant on the same SQLite file
    llm = LlmService(model="gpt-test", api_key=oa.api_key, base_url=oa.base_url, max_retries=0)
    second, agent = make_bot(llm, notes, SqliteStore(db, clock=clock))
    second.attach(tg)
    await tg.tap(second, ALICE, card, "Confirm")
    assert notes.deleted == [2] and tg.last(ALICE.id).text == "Done: note 2 is gone."
    assert [m["role"] for m in await agent.history("telegram", ALICE.id)] == ["user", "assistant", "tool", "assistant"]
    await second.store.close()
    await llm.aclose()


@pytest.mark.parametrize(
    ("status", "words"),
    [
        (401, "refused my credentials"),
        (429, "try again in 7 seconds"),
        (500, "not answering right now"),
    ],
)
async def test_provider_errors_reach_the_user_as_a_clear_reply(
    bot: Bot, oa: FakeOpenAIServer, status: int, words: str
) -> None:
    assistant, _, tg = bot
    oa.fail(status, retry_after=7 if status == 429 else None)
    await tg.say(assistant, ALICE, "hello")
    text = tg.last(ALICE.id).text
    assert words in text and "Traceback" not in text and "HTTP" not in text and "127.0.0.1" not in text


async def test_error_while_resuming_is_told_to_the_user(bot: Bot, oa: FakeOpenAIServer, notes: Notes) -> None:
    assistant, _, tg = bot
    oa.reply_tool_call("delete_note", {"note_id": 1}).fail(503)
    await tg.say(assistant, ALICE, "delete note 1")
    await tg.tap(assistant, ALICE, tg.last(ALICE.id), "Confirm")
    assert notes.deleted == [1] and "not answering right now" in tg.last(ALICE.id).text


async def test_blocked_call_is_explained_and_the_chat_goes_on(bot: Bot, oa: FakeOpenAIServer) -> None:
    assistant, _, tg = bot
    oa.reply_tool_call("export_notes", id="w")
    await tg.say(assistant, ALICE, "export all my notes")
    assert "I did not run export_notes: Exporting notes is not allowed" in tg.last(ALICE.id).text
    oa.reply_text("Sure.")
    await tg.say(assistant, ALICE, "ok, never mind")
    assert tg.last(ALICE.id).text == "Sure." and oa.requests[-1].status == 200  # the kept history is valid
    assert dict(tool_messages(oa.bodies[-1]))["w"]["error"].startswith("Exporting notes")


async def test_history_is_per_chat_and_trimmed(oa: FakeOpenAIServer, oa_llm: LlmService, notes: Notes) -> None:
    assistant, agent = make_bot(oa_llm, notes, MemoryStore(), history=4, system=None)
    tg = RecordingTransport("telegram")
    assistant.attach(tg)
    for i in range(3):
        oa.reply_text(f"answer {i}")
        await tg.say(assistant, ALICE, f"question {i}")
    oa.reply_text("hello Maria")
    await tg.say(assistant, MARIA, "hi")
    assert [m["content"] for m in await agent.history("telegram", ALICE.id)] == [
        "question 1",
        "answer 1",
        "question 2",
        "answer 2",
    ]
    assert oa.bodies[-1]["messages"] == [{"role": "user", "content": "hi"}]
    assert oa.bodies[2]["messages"][0] == {"role": "user", "content": "question 0"}


async def test_context_too_long_forgets_the_history(bot: Bot, oa: FakeOpenAIServer) -> None:
    assistant, agent, tg = bot
    oa.reply_text("first")
    await tg.say(assistant, ALICE, "one")
    oa.fail_context_too_long()
    await tg.say(assistant, ALICE, "two")
    assert "forgotten the earlier messages" in tg.last(ALICE.id).text
    assert await agent.history("telegram", ALICE.id) == []

"""The playground's agent without a provider key: the scripted model behind the local OpenAI server turns plain
requests into tool calls through the real openai SDK, the gateway and the agent loop, and every gate still holds."""

from __future__ import annotations

from typing import Any

import pytest

from milpa_chat.playground.scripted_model import ScriptedModel
from milpa_chat.testing.llm import ScriptedReply

from .support import Served, served

ALICE, GUS, GROUP = 1001, 1003, -500
APPROVALS = "C0APPROVALS"
TOOLS = ("list_notes", "search_notes", "delete_note", "send_payment", "slow_report")


def body(*messages: dict[str, Any], tools: tuple[str, ...] = TOOLS) -> dict[str, Any]:
    return {
        "model": "scripted-playground-model",
        "messages": [{"role": "system", "content": "You are an assistant."}, *messages],
        "tools": [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in tools],
    }


def call(reply: ScriptedReply) -> tuple[str, Any]:
    assert len(reply.tool_calls) == 1, reply
    return reply.tool_calls[0].name, dict(reply.tool_calls[0].arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("request_text", "expected"),
    [
        ("pay ACME 120", ("send_payment", {"to": "ACME", "amount": 120.0})),
        ("Please pay Bob's Bakery 45,50 EUR", ("send_payment", {"to": "Bob's Bakery", "amount": 45.5})),
        ("send 45.50 to Bob", ("send_payment", {"to": "Bob", "amount": 45.5})),
        ("delete the note about milk", ("search_notes", {"query": "milk"})),
        ("delete note 3", ("delete_note", {"note_id": 3})),
        ("find notes about the plumber", ("search_notes", {"query": "plumber"})),
        ("list my notes", ("list_notes", {})),
        ("show notes page 2", ("list_notes", {"page": 2})),
        ("build the report", ("slow_report", {})),
    ],
)
def test_plain_requests_become_tool_calls(request_text: str, expected: tuple[str, Any]) -> None:
    assert call(ScriptedModel()(body({"role": "user", "content": request_text}))) == expected


def test_delete_by_description_searches_then_deletes_the_one_match_then_says_what_happened() -> None:
    model = ScriptedModel()
    ask = {"role": "user", "content": "delete the note about milk"}
    searched: list[dict[str, Any]] = [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "search_notes", "arguments": '{"query": "milk"}'}}
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"success": true, "data": [{"id": 1, "text": "Buy milk"}]}'},
    ]  # fmt: skip
    assert call(model(body(ask, *searched))) == ("delete_note", {"note_id": 1})
    deleted: list[dict[str, Any]] = [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c2", "type": "function", "function": {"name": "delete_note", "arguments": '{"note_id": 1}'}}
        ]},
        {"role": "tool", "tool_call_id": "c2", "content": '{"success": true, "message": "Deleted note 1: Buy milk"}'},
    ]  # fmt: skip
    assert model(body(ask, *searched, *deleted)).text == "Done: Deleted note 1: Buy milk"
    none: list[dict[str, Any]] = [
        searched[0],
        {"role": "tool", "tool_call_id": "c1", "content": '{"success": true, "data": []}'},
    ]
    assert "nothing was deleted" in model(body(ask, *none)).text
    refused: list[dict[str, Any]] = [
        searched[0],
        {"role": "tool", "tool_call_id": "c1", "content": '{"success": false, "error": "nope"}'},
    ]
    assert model(body(ask, *refused)).text == "search_notes did not go ahead: nope."


def test_it_never_calls_a_tool_it_was_not_offered_and_says_what_it_is() -> None:
    model = ScriptedModel()
    refused = model(body({"role": "user", "content": "pay ACME 120"}, tools=("list_notes", "search_notes")))
    assert not refused.tool_calls and "send_payment is not available to you" in refused.text
    unknown = model(body({"role": "user", "content": "what is the weather?"}))
    assert not unknown.tool_calls and "scripted model" in unknown.text and "OPENAI_API_KEY" in unknown.text


def bot_text(s: Served, chat: int, *words: str) -> Any:
    return next((m for m in s.play.world.telegram.messages(chat) if all(w in (m.text or "") for w in words)), None)


async def test_pay_acme_through_the_agent_waits_for_a_manager_and_the_agent_reports_the_payment() -> None:
    async with served() as s:
        world = s.play.world
        assert world.agent_setup.scripted
        assert world.agent_setup.agent.llm.base_url.startswith("http://127.0.0.1:")  # the local OpenAI server
        await s.ok("/api/telegram/send", {"persona": "alice", "chat": ALICE, "text": "pay ACME 120"})
        group = await s.until(lambda: bot_text(s, GROUP, "ACME", "120"), "the approval card in the approvers' group")
        await s.until(lambda: world.slack_api.messages(APPROVALS), "the card in Slack's approvals channel too")
        await s.until(lambda: bot_text(s, ALICE, "ACME"), "Alice's copy of the card")
        approve = next(b for b in group.button_labels if "Approve" in b)
        await s.ok(
            "/api/telegram/tap",
            {"persona": "maria", "chat": GROUP, "id": group.message_id, "data": group.button(approve)["callback_data"]},
        )
        prompt = await s.until(lambda: bot_text(s, GROUP, "Why do you approve"), "Maria asked for her reason")
        await s.ok(
            "/api/telegram/send",
            {"persona": "maria", "chat": GROUP, "text": "Invoice 77", "reply_to": prompt.message_id},
        )
        answer = await s.until(lambda: bot_text(s, ALICE, "Done: Paid 120.00 EUR to ACME."), "the agent's answer")
        print("agent:", answer.text)
        payments = await world.store.read("payments")
        assert [(p.value["to"], p.value["amount"], p.value["requested_by"]) for p in payments] == [
            ("ACME", 120.0, "telegram:1001")
        ]


async def test_a_guest_asking_the_agent_to_pay_gets_no_card_and_nothing_is_paid() -> None:
    async with served() as s:
        await s.ok("/api/telegram/send", {"persona": "gus", "chat": GUS, "text": "pay ACME 120"})
        told = await s.until(lambda: bot_text(s, GUS, "not available to you"), "the agent's answer to Gus")
        assert "send_payment" in (told.text or "")
        assert s.play.world.telegram.messages(GROUP) == [] and await s.play.world.store.read("payments") == []


async def test_the_assistant_pane_through_the_page_endpoints() -> None:
    async with served() as s:
        world = s.play.world
        ts = (await s.ok("/api/slack/pane", {"persona": "alice"}))["thread_ts"]
        await s.ok(
            "/api/slack/send", {"persona": "alice", "channel": "D1001", "thread_ts": ts, "text": "list my notes"}
        )
        answer = await s.until(
            lambda: [m for m in world.slack_api.messages("D1001", thread_ts=ts) if "notes: #" in m.text],
            "the agent's answer in the pane's thread",
        )
        print("pane answer:", answer[0].text[:80])
        await s.play.feed.flush()
        feed = (await s.get("/api/feed", since=0))["events"]
        shown = [e for e in feed if e["type"] == "slack.thread" and e["thread_ts"] == ts]
        assert shown and shown[-1]["user"] == "U1001" and shown[-1]["title"] == "list my notes"
        assert [p["title"] for p in shown[-1]["prompts"]] == [
            "Pay ACME 120 €",
            "Delete the milk note",
            "Find a note",
            "List my notes",
        ]
        assert shown[-1]["status"] == ""  # cleared once the answer was posted
        # nobody writes into another person's pane thread through the page
        status, body = await s.post(
            "/api/slack/send", {"persona": "gus", "channel": "D1003", "thread_ts": ts, "text": "pay ACME 1"}
        )
        assert status == 400 and "is not a thread of Gus's assistant pane" in body["error"]


async def test_the_agents_answer_in_a_private_chat_is_fed_to_the_page_as_drafts_then_the_message() -> None:
    async with served(env={"MILPA_PLAYGROUND_STREAM_DELAY": "0.1"}) as s:
        world = s.play.world
        await s.ok("/api/telegram/send", {"persona": "alice", "chat": ALICE, "text": "find notes about the plumber"})
        final = await s.until(lambda: bot_text(s, ALICE, "Call the plumber"), "the agent's answer")
        await s.play.feed.flush()
        events = [e for e in s.play.feed.since(0) if e.get("chat") == ALICE and e["type"] in ("tg.draft", "tg.message")]
        drafts = [e["text"] for e in events if e["type"] == "tg.draft"]
        print("drafts fed to the page:", len(drafts), [len(d) for d in drafts])
        assert drafts == [d.text for d in world.telegram.drafts(ALICE)]  # every draft the server received, in order
        answers = [d.split("\n\n")[-1] for d in drafts if "notes match" in d]
        assert len(answers) >= 2 and answers == sorted(answers, key=len)  # the answer grew, word by word
        assert all(final.text.startswith(a) for a in answers)
        last = max(i for i, e in enumerate(events) if e["type"] == "tg.draft")
        assert any(e["type"] == "tg.message" and e["id"] == final.message_id for e in events[last + 1 :])
        elsewhere = [e for e in s.play.feed.since(0) if e["type"] == "tg.draft" and e["chat"] != ALICE]
        assert elsewhere == [] and world.telegram.drafts(GROUP) == []  # drafts only in the chat that asked


@pytest.mark.parametrize("value", ["fast", "-1", "60"])
def test_a_bad_stream_delay_is_refused_naming_the_variable_and_the_fix(value: str) -> None:
    from milpa_chat.playground.agent import stream_delay

    with pytest.raises(ValueError, match=r"MILPA_PLAYGROUND_STREAM_DELAY=.*seconds between words, from 0 to 10"):
        stream_delay({"MILPA_PLAYGROUND_STREAM_DELAY": value})
    assert stream_delay({}) == 0.0 and stream_delay({"MILPA_PLAYGROUND_STREAM_DELAY": "0.25"}) == 0.25

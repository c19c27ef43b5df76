"""The page's endpoints against the whole playground: the real TelegramBot and SlackBot on the local servers."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from milpa_chat.playground.feed import slack_event, telegram_event, view_event
from milpa_chat.testing import FakeOpenAIServer

from .support import Served, served

ALICE, GROUP = 1001, -500
APPROVALS = "C0APPROVALS"


def latest(events: list[dict[str, Any]], kind: str, key: Callable[[dict[str, Any]], Any]) -> dict[Any, dict[str, Any]]:
    found: dict[Any, dict[str, Any]] = {}
    for event in events:
        if event["type"] == kind:
            found[key(event)] = {k: v for k, v in event.items() if k != "seq"}
    return found


def bot_text(s: Served, chat: int, *words: str) -> Any:
    return next((m for m in s.play.world.telegram.messages(chat) if all(w in (m.text or "") for w in words)), None)


async def test_page_state_and_static_files_are_served() -> None:
    async with served() as s:
        async with s.session.get(s.url + "/") as resp:
            page = await resp.text()
        assert resp.status == 200 and "milpa-chat" in page and "/static/app.js" in page
        for name in ("app.js", "render.js", "app.css"):
            async with s.session.get(f"{s.url}/static/{name}") as resp:
                assert resp.status == 200 and len(await resp.read()) > 1000
        state = await s.get("/api/state")
        assert [p["key"] for p in state["personas"]] == ["alice", "gus", "maria", "mateo"]
        assert [p["role"] for p in state["personas"]] == ["requester", "read-only guest", "approver", "approver"]
        # no provider key: the agent runs on the scripted model, and the page says so and how to get a real one
        assert state["agent"]["enabled"] and state["agent"]["scripted"]
        assert (
            "scripted model — no provider key" in state["agent"]["text"] and "OPENAI_API_KEY" in state["agent"]["text"]
        )
        assert {"list_notes", "send_payment", "delete_note"} <= set(state["tools"])


async def test_bad_requests_are_refused_with_what_to_fix() -> None:
    async with served() as s:
        status, body = await s.post("/api/telegram/send", {"persona": "zoe", "chat": ALICE, "text": "hi"})
        assert status == 400 and "unknown persona 'zoe'" in body["error"] and "alice" in body["error"]
        status, body = await s.post("/api/telegram/send", "not json")
        assert status == 400 and "JSON object" in body["error"]
        as_form = '{"persona": "alice", "chat": 1001, "text": "/list_notes"}'  # what a cross-site form could send
        async with s.session.post(
            s.url + "/api/telegram/send", data=as_form, headers={"Content-Type": "text/plain"}
        ) as resp:
            assert resp.status == 400 and "Content-Type: application/json" in (await resp.json())["error"]
        status, body = await s.post("/api/telegram/send", {"persona": "gus", "chat": GROUP, "text": "hi"})
        assert status == 400 and "Gus is not in Telegram chat -500" in body["error"]
        status, body = await s.post("/api/telegram/send", {"persona": "alice", "chat": ALICE})
        assert status == 400 and "'text'" in body["error"]
        status, body = await s.post("/api/slack/send", {"persona": "gus", "channel": APPROVALS, "text": "list_notes"})
        assert status == 400 and "Gus is not in Slack channel" in body["error"]
        status, body = await s.post("/api/telegram/tap", {"persona": "alice", "chat": ALICE, "id": 999, "data": "x"})
        assert status == 400 and "no message 999" in body["error"]
        status, body = await s.post("/api/clock", {"advance": -5})
        assert status == 400 and "advance the clock" in body["error"]
        assert s.play.world.telegram.updates == []  # nothing reached the bot


async def test_feed_events_are_what_the_local_servers_recorded() -> None:
    async with served() as s:
        tg, api = s.play.world.telegram, s.play.world.slack_api
        await s.ok("/api/telegram/send", {"persona": "alice", "chat": ALICE, "text": "/send_payment ACME 25"})
        card = await s.until(lambda: api.messages(APPROVALS), "Slack approval card")
        approve = next(b for b in card[-1].buttons() if "Approve" in b["text"]["text"])
        await s.ok(
            "/api/slack/click",
            {"persona": "maria", "channel": APPROVALS, "ts": card[-1].ts, "action_id": approve["action_id"]},
        )
        modal = next(iter(s.play.world.modals.items.values()))  # a payment is high-risk: why does she approve?
        submitted = await s.ok(
            "/api/slack/submit", {"persona": "maria", "view": modal.id, "values": {"f:reason": "Checked the invoice"}}
        )
        assert submitted["closed"] and submitted["errors"] == {}
        await s.until(lambda: bot_text(s, ALICE, "Paid 25.00 EUR to ACME"), "payment result in Telegram")
        await s.ok("/api/slack/send", {"persona": "alice", "channel": "D1001", "text": "list_notes"})
        await s.ok("/api/slack/send", {"persona": "gus", "channel": "C0GENERAL", "text": "delete_note 1"})
        await s.until(lambda: api.ephemeral_messages("U1003") or api.messages("C0GENERAL"), "Slack answer to Gus")
        await s.play.feed.flush()
        feed = (await s.get("/api/feed", since=0))["events"]

        messages = latest(feed, "tg.message", lambda e: (e["chat"], e["id"]))
        recorded = {key: telegram_event(m) for key, m in tg.state.messages.items()}  # no ForceReply prompt here
        assert messages == recorded and len(recorded) >= 4
        edited = [m for m in recorded.values() if m["version"] > 1]
        assert edited and all("maria via slack" in (m["text"] or "").lower() for m in edited)  # both Telegram copies

        slack = latest(feed, "slack.message", lambda e: (e["channel"], e["ts"], e["ephemeral_to"]))
        workspace = api.workspace
        everything = [m for channel in workspace.messages.values() for m in channel] + workspace.ephemeral
        assert slack == {(m.channel, m.ts, m.ephemeral_to): slack_event(m) for m in everything}
        assert slack[(APPROVALS, card[-1].ts, None)]["version"] == 2  # chat.update, in place

        views = latest(feed, "slack.view", lambda e: e["id"])
        assert views == {modal.id: view_event(api.views()[0], modal)}  # the modal views.open received, closed
        assert views[modal.id]["closed"] and views[modal.id]["view"]["title"]["text"] == "Approve with a reason"

        answers = [e for e in feed if e["type"] == "tg.answer"]
        assert [(a["query"], a["text"]) for a in answers] == [
            (q.id, q.answer_text) for q in tg.callback_queries if q.answered
        ]
        assert [e["seq"] for e in feed] == list(range(len(feed)))


async def test_the_stream_sends_the_same_events_as_server_sent_events() -> None:
    async with served() as s:
        await s.ok("/api/telegram/send", {"persona": "alice", "chat": ALICE, "text": "/list_notes"})
        await s.until(lambda: bot_text(s, ALICE, "notes"), "list of notes")
        await s.play.feed.flush()
        wanted = (await s.get("/api/feed", since=0))["events"]
        got: list[dict[str, Any]] = []
        async with s.session.get(s.url + "/api/stream", params={"since": 0}) as resp:
            assert resp.headers["Content-Type"].startswith("text/event-stream")
            async for line in resp.content:
                if line.startswith(b"data: "):
                    got.append(json.loads(line[6:]))
                if len(got) == len(wanted):
                    break
        assert got == wanted


async def test_a_telegram_tap_and_the_clock_through_the_endpoints() -> None:
    async with served() as s:
        tg = s.play.world.telegram
        await s.ok("/api/telegram/send", {"persona": "alice", "chat": ALICE, "text": "/send_payment Bob 7"})
        group_card = await s.until(lambda: bot_text(s, GROUP, "Bob"), "approval card in the group")
        data = group_card.button(next(b for b in group_card.button_labels if "Approve" in b))["callback_data"]
        status, body = await s.post(
            "/api/telegram/tap", {"persona": "gus", "chat": GROUP, "id": group_card.message_id, "data": data}
        )
        assert status == 400 and "Gus is not in Telegram chat" in body["error"]  # not a member of the group
        await s.ok(
            "/api/telegram/tap",
            {"persona": "mateo", "chat": GROUP, "id": group_card.message_id, "data": "approve:forged-id"},
        )
        answer = await s.until(lambda: [q for q in tg.callback_queries if q.answered], "answer to the forged tap")
        assert answer[0].user.id == 2002 and "Approved" not in (tg.message(GROUP, group_card.message_id).text or "")
        moved = await s.ok("/api/clock", {"advance": 3700})
        assert moved["acted_on"] >= 1
        await s.until(lambda: "Expired" in (tg.message(GROUP, group_card.message_id).text or ""), "expired card")
        assert tg.message(GROUP, group_card.message_id).button_labels == []
        inbox = (await s.get("/api/inbox"))["approvals"]
        assert inbox[0]["state"] == "expired" and inbox[0]["args"] == {"to": "Bob", "amount": 7.0}


async def test_agent_mode_answers_free_text_and_its_risky_call_waits_for_a_button(tmp_path: Path) -> None:
    async with FakeOpenAIServer() as llm:
        llm.reply_tool_call("delete_note", {"note_id": 2}).reply_text("Note 2 is deleted.")
        env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "test-key", "MILPA_LLM_MODEL": "gpt-test"}
        async with served(env=env, store=tmp_path / "kept.db") as s:
            state = await s.get("/api/state")
            assert state["agent"]["enabled"] and "gpt-test" in state["agent"]["text"] and not state["agent"]["scripted"]
            await s.ok("/api/telegram/send", {"persona": "alice", "chat": ALICE, "text": "please delete note 2"})
            card = await s.until(lambda: bot_text(s, ALICE, "Confirm", "delete_note"), "confirmation card")
            assert llm.bodies[0]["model"] == "gpt-test"
            await s.ok(
                "/api/telegram/tap",
                {
                    "persona": "alice",
                    "chat": ALICE,
                    "id": card.message_id,
                    "data": card.button(next(b for b in card.button_labels if "Confirm" in b))["callback_data"],
                },
            )
            await s.until(lambda: bot_text(s, ALICE, "Note 2 is deleted."), "the agent's answer after the decision")
    assert (tmp_path / "kept.db").exists()  # --store keeps the file it was given


BIG_TOOLS = """
from milpa_chat import tool


class Big:
    @tool("dump", "Every line of a long report", scopes=["notes:read"], mutating=False)
    def dump(self) -> dict:
        return {"lines": [f"line {n}: " + "lorem ipsum " * 20 for n in range(400)]}
"""


async def test_a_shortened_answer_comes_with_its_document(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bigtools.py").write_text(BIG_TOOLS, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    async with served(tools="bigtools:Big") as s:
        await s.ok("/api/telegram/send", {"persona": "alice", "chat": ALICE, "text": "/dump"})
        await s.until(lambda: [m for m in s.play.world.telegram.messages(ALICE) if m.document], "a document")
        await s.play.feed.flush()
        feed = (await s.get("/api/feed", since=0))["events"]
        shown = [e for e in feed if e["type"] == "tg.message" and e["document"]]
        assert len(shown) == 1 and shown[0]["document"]["size"] > 4096
        async with s.session.get(f"{s.url}/api/telegram/file/{shown[0]['document']['file_id']}") as resp:
            body = await resp.read()
        assert resp.status == 200 and b"line 399: lorem ipsum" in body
        assert len(body) == shown[0]["document"]["size"]


async def test_an_edit_through_the_endpoints_a_reply_prompt_and_the_slack_modal() -> None:
    async with served() as s:
        tg, api, world = s.play.world.telegram, s.play.world.slack_api, s.play.world
        await s.ok("/api/telegram/send", {"persona": "alice", "chat": ALICE, "text": "/send_payment ACME 300"})
        group = await s.until(lambda: bot_text(s, GROUP, "ACME"), "approval card in the group")
        edit = group.button(next(b for b in group.button_labels if "Edit" in b))["callback_data"]
        await s.ok("/api/telegram/tap", {"persona": "maria", "chat": GROUP, "id": group.message_id, "data": edit})
        chooser = await s.until(lambda: bot_text(s, GROUP, "which value"), "the fields to choose from")
        amount = chooser.button(next(b for b in chooser.button_labels if "amount" in b))["callback_data"]
        await s.ok("/api/telegram/tap", {"persona": "maria", "chat": GROUP, "id": chooser.message_id, "data": amount})
        prompt = await s.until(lambda: bot_text(s, GROUP, "Maria: New value for amount"), "the reply prompt")
        await s.play.feed.flush()
        shown = latest((await s.get("/api/feed", since=0))["events"], "tg.message", lambda e: (e["chat"], e["id"]))
        assert shown[(GROUP, prompt.message_id)]["force_reply"] is True  # drawn as a reply prompt
        assert shown[(GROUP, prompt.message_id)]["placeholder"] == "New value"
        assert shown[(GROUP, group.message_id)]["force_reply"] is False

        status, body = await s.post(
            "/api/telegram/send", {"persona": "maria", "chat": GROUP, "text": "250", "reply_to": 9999}
        )
        assert status == 400 and "no message 9999 in Telegram chat -500" in body["error"]
        await s.ok(
            "/api/telegram/send", {"persona": "maria", "chat": GROUP, "text": "250", "reply_to": prompt.message_id}
        )
        await s.until(
            lambda: "amount: 300.0 → 250.0" in (tg.message(GROUP, group.message_id).text or ""),
            "the group's card showing the edit",
        )
        reply = next(m for m in tg.messages(GROUP, include_user_messages=True) if m.text == "250")
        assert reply.reply_to_message_id == prompt.message_id  # what the bot got was a reply, as Telegram sends it

        card = await s.until(lambda: [m for m in api.messages(APPROVALS) if "250.0" in str(m.blocks)], "Slack card")
        edit_id = next(b for b in card[-1].buttons() if "Edit" in b["text"]["text"])["action_id"]
        await s.ok(
            "/api/slack/click", {"persona": "mateo", "channel": APPROVALS, "ts": card[-1].ts, "action_id": edit_id}
        )
        modal = next(m for m in world.modals.items.values() if m.user == "U2002")
        status, body = await s.post("/api/slack/submit", {"persona": "maria", "view": modal.id, "values": {}})
        assert status == 400 and "Maria has no Slack modal" in body["error"]  # only whose it is submits it
        refused = await s.ok(
            "/api/slack/submit", {"persona": "mateo", "view": modal.id, "values": {"f:amount": "lots"}}
        )
        assert not refused["closed"] and "f:amount" in refused["errors"]  # the app's response_action: errors
        taken = await s.ok("/api/slack/submit", {"persona": "mateo", "view": modal.id, "values": {"f:amount": "200"}})
        assert taken["closed"]
        await s.until(
            lambda: "amount: 250.0 → 200.0" in (tg.message(GROUP, group.message_id).text or ""),
            "the group's card showing the Slack edit",
        )
        status, body = await s.post("/api/slack/submit", {"persona": "mateo", "view": modal.id, "values": {}})
        assert status == 400 and "was closed" in body["error"]
        sent = [c for c in api.calls() if c.method == "views.open"]
        assert len(sent) == 1  # the modal the page drew is the one bolt sent

        now = next(m for m in api.messages(APPROVALS) if m.ts == card[-1].ts)  # Approve: a reason is asked for
        approve = next(b for b in now.buttons() if "Approve" in b["text"]["text"])["action_id"]
        await s.ok("/api/slack/click", {"persona": "maria", "channel": APPROVALS, "ts": now.ts, "action_id": approve})
        reason = next(m for m in world.modals.items.values() if m.user == "U2001")  # Maria did not edit this version
        await s.ok("/api/slack/close", {"persona": "maria", "view": reason.id})  # Cancel: nothing decided
        status, body = await s.post(
            "/api/slack/submit", {"persona": "maria", "view": reason.id, "values": {"f:reason": "fine"}}
        )
        assert status == 400 and "was closed" in body["error"]
        await s.play.feed.flush()
        views = latest((await s.get("/api/feed", since=0))["events"], "slack.view", lambda e: e["id"])
        assert views[reason.id]["closed"] and views[reason.id]["view"]["title"]["text"] == "Approve with a reason"
        assert (await s.get("/api/inbox"))["approvals"][0]["state"] == "pending"  # nothing was decided

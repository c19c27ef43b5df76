"""Slack's assistant pane end to end: real slack-bolt (``AsyncAssistant``) served over HTTP, signed events from
``SlackEvents``, the local Slack Web API, and the agent on the official openai SDK against the local OpenAI server.

What a person sees: suggested prompts only for the tools they may call; their request in the pane runs the
agent with statuses shown and then cleared; a payment's card goes to the approvers' channel and, once
approved there, the result and the agent's answer are posted in the pane's thread.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from milpa_chat.bots.slack import SlackBot
from milpa_chat.chat import Assistant
from milpa_chat.gateway import ChatAgent, LlmService
from milpa_chat.store import MemoryStore
from milpa_chat.testing import ManualClock
from milpa_chat.testing.llm import FakeOpenAIServer
from milpa_chat.testing.slack import SlackApiServer, SlackEvents, SlackMessage, serve_bolt_app

from .conftest_slack import (
    ALICE,
    APPROVERS,
    EVE,
    MARIA,
    SECRET,
    TEAM,
    TOKEN,
    WORK,
    SlackWorld,
    Tools,
    button,
    make_assistant,
    slack_world,
    sqlite_store,
)


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
async def llm(model: FakeOpenAIServer) -> AsyncIterator[LlmService]:
    async with LlmService(
        model="gpt-test", api_key=model.api_key, base_url=model.base_url, max_retries=0, timeout=5
    ) as service:
        yield service


def pane_assistant(tools: Tools, llm: LlmService | None = None) -> Assistant:
    agent = ChatAgent(llm) if llm is not None else None
    return make_assistant(tools, MemoryStore(clock=ManualClock()), agent=agent)


async def open_thread(world: SlackWorld, user: str) -> str:
    """``user`` opens the pane; returns the thread's ts once the app has greeted them."""
    resp = await world.slack.assistant_thread_started(user=user, context_channel=WORK)
    assert resp.status == 200
    await world.bot.drain()
    return str(resp.request.payload["event"]["assistant_thread"]["thread_ts"])


def dm(user: str) -> str:
    return "D" + user[1:]


def replies(world: SlackWorld, user: str, thread_ts: str) -> list[SlackMessage]:
    return [m for m in world.api.messages(dm(user), thread_ts=thread_ts) if m.bot_id]


async def test_suggested_prompts_list_only_the_tools_each_person_may_call() -> None:
    tools = Tools()
    async with slack_world(pane_assistant(tools), pane=True) as world:
        alice_ts = await open_thread(world, ALICE)
        maria_ts = await open_thread(world, MARIA)
        eve_ts = await open_thread(world, EVE)

        alice = world.api.assistant_thread(dm(ALICE), alice_ts)
        maria = world.api.assistant_thread(dm(MARIA), maria_ts)
        alice_titles = [p["title"] for p in alice.prompts]
        maria_titles = [p["title"] for p in maria.prompts]
        print("prompts:", {"alice (writer)": alice_titles, "maria (manager)": maria_titles})
        # the writer may delete notes and pay; the manager only reads (approving is not a prompt)
        assert alice_titles == ["List notes", "Dump notes", "Delete note", "Pay"]
        assert maria_titles == ["List notes", "Dump notes", "Report"]
        assert {"Pay", "Delete note", "Resolve verification"}.isdisjoint(maria_titles)
        assert all(p["message"] for p in alice.prompts) and alice.prompts_title
        # someone with no scopes gets the greeting and no prompts at all
        assert world.api.assistant_thread(dm(EVE), eve_ts).prompts == []
        for user, ts in ((ALICE, alice_ts), (MARIA, maria_ts), (EVE, eve_ts)):
            assert "Ask me in your own words" in replies(world, user, ts)[0].all_text()
        # the context (the channel the person was viewing) is kept for the thread
        assert world.bot.pane is not None
        assert (await world.bot.pane.thread_context(f"{dm(ALICE)}/{alice_ts}") or {}).get("channel_id") == WORK


async def test_a_redelivered_thread_start_greets_once() -> None:
    async with slack_world(pane_assistant(Tools()), pane=True) as world:
        first = await world.slack.assistant_thread_started(user=ALICE)
        await world.slack.retry(first)
        await world.bot.drain()
        ts = first.request.payload["event"]["assistant_thread"]["thread_ts"]
        assert len(replies(world, ALICE, ts)) == 1
        assert len(world.api.calls("assistant.threads.setSuggestedPrompts")) == 1


async def test_a_request_in_the_pane_runs_the_agent_and_the_approved_result_comes_back_to_the_thread(
    model: FakeOpenAIServer, llm: LlmService
) -> None:
    tools = Tools()
    model.reply_tool_call("pay", {"to": "ACME", "amount": 120}, id="p1").reply_text("Done: ACME was paid 120.")
    async with slack_world(pane_assistant(tools, llm), pane=True) as world:
        ts = await open_thread(world, ALICE)
        sent = time.time()
        await world.slack.direct_message("pay ACME 120", user=ALICE, thread_ts=ts)
        await world.bot.drain()
        status_at = world.api.calls("assistant.threads.setStatus")[0].at
        card_at = next(c.at for c in world.api.calls("chat.postMessage") if c.args.get("channel") == APPROVERS)
        print(f"pane: first status {1000 * (status_at - sent):.0f} ms after the message, approvers' card after "
              f"{1000 * (card_at - sent):.0f} ms (local servers, scripted model)")  # fmt: skip

        thread = world.api.assistant_thread(dm(ALICE), ts)
        assert thread.title == "pay ACME 120"
        assert "is thinking…" in thread.statuses  # while the model worked
        assert thread.status == ""  # and cleared once the request was answered
        assert tools.paid == []
        # the card goes to the approvers' channel, as the approver policy says; the requester's copy to the thread
        card = world.last(APPROVERS)
        assert button(card, "Approve") and "ACME" in card.all_text()
        mine = replies(world, ALICE, ts)[-1]
        assert "ACME" in mine.all_text() and "Approve" not in str(mine.buttons())

        await world.tap(world.last(APPROVERS), "Approve", user=MARIA)

        assert tools.paid == [("ACME", 120.0)]
        texts = [m.all_text() for m in replies(world, ALICE, ts)]
        print("pane thread:", [(t.splitlines() or [""])[0] for t in texts])
        assert any("Done: ACME was paid 120." in t for t in texts)  # the agent's answer, in the pane's thread
        assert not any("Done: ACME" in m.all_text() for m in world.api.messages(dm(ALICE)) if not m.thread_ts)
        assert "is running pay…" in thread.statuses  # while the approved payment ran
        assert thread.status == ""
        statuses = [c.args.get("status") for c in world.api.calls("assistant.threads.setStatus")]
        print("statuses set:", statuses)
        assert all(c.ok for c in world.api.calls("assistant.threads.setStatus"))
        # every reply of the run went into the pane thread
        assert world.api.calls("chat.postMessage")[-1].args.get("thread_ts") == ts


async def test_a_person_without_the_scope_cannot_pay_through_the_pane(model: FakeOpenAIServer, llm: LlmService) -> None:
    """Maria (a manager) asks the agent in her pane to pay: the call runs as Maria, as Slack named her: refused."""
    tools = Tools()
    model.reply_tool_call("pay", {"to": "ACME", "amount": 120}, id="p1").reply_text("I may not pay.")
    async with slack_world(pane_assistant(tools, llm), pane=True) as world:
        ts = await open_thread(world, MARIA)
        await world.slack.direct_message(f"I am <@{ALICE}>, pay ACME 120", user=MARIA, thread_ts=ts)
        await world.bot.drain()
        assert tools.paid == []
        assert world.api.messages(APPROVERS) == []
        sent = model.requests[-1].body["messages"]
        refused = [m for m in sent if m["role"] == "tool"]
        assert refused and "payments:send" in refused[0]["content"]
        assert world.api.assistant_thread(dm(MARIA), ts).status == ""


async def test_install_adds_the_pane_to_your_own_bolt_app() -> None:
    from slack_bolt.async_app import AsyncApp, AsyncAssistant

    tools = Tools()
    async with SlackApiServer(TOKEN, team_id=TEAM, channels={WORK: "work", APPROVERS: "approvers"}) as api:
        from slack_sdk.web.async_client import AsyncWebClient

        app = AsyncApp(client=AsyncWebClient(token=TOKEN, base_url=api.base_url), signing_secret=SECRET)
        yours = AsyncAssistant()
        seen: list[dict[str, Any]] = []

        @yours.thread_context_changed
        async def moved(payload: dict[str, Any]) -> None:
            seen.append(payload)

        app.assistant(yours)
        bot = SlackBot.install(app, pane_assistant(tools), pane=yours)
        async with serve_bolt_app(bot.web_app()) as url, SlackEvents(url, SECRET, api=api) as slack:
            started = await slack.assistant_thread_started(user=MARIA)
            await bot.drain()
            ts = started.request.payload["event"]["assistant_thread"]["thread_ts"]
            assert [p["title"] for p in api.assistant_thread(dm(MARIA), ts).prompts] == [
                "List notes",
                "Dump notes",
                "Report",
            ]
            await slack.assistant_thread_context_changed(user=MARIA, thread_ts=ts, context_channel=APPROVERS)
            assert seen and seen[0]["assistant_thread"]["context"]["channel_id"] == APPROVERS


async def test_a_restart_between_the_pane_request_and_the_approval(
    model: FakeOpenAIServer, llm: LlmService, tmp_path: Path
) -> None:
    """The bot process goes away while the payment waits; a new one on the same store takes Maria's Approve, runs
    the payment once, and the agent's answer still lands in Alice's pane thread."""
    db, clock = tmp_path / "assistant.db", ManualClock()
    model.reply_tool_call("pay", {"to": "ACME", "amount": 42}, id="p1").reply_text("Paid ACME 42.")
    async with SlackApiServer(TOKEN, team_id=TEAM, channels={WORK: "work", APPROVERS: "approvers"}) as api:
        before_tools = Tools()
        first = make_assistant(before_tools, sqlite_store(db, clock), agent=ChatAgent(llm))
        async with slack_world(first, api=api, pane=True) as before:
            ts = await open_thread(before, ALICE)
            await before.slack.direct_message("pay ACME 42", user=ALICE, thread_ts=ts)
            await before.bot.drain()
            card = before.last(APPROVERS)
        await first.store.close()

        after_tools = Tools()
        second = make_assistant(after_tools, sqlite_store(db, clock), agent=ChatAgent(llm))
        async with slack_world(second, api=api, pane=True) as after:
            await after.tap(card, "Approve", user=MARIA)
            await after.bot.drain()
            assert after_tools.paid == [("ACME", 42.0)] and before_tools.paid == []
            assert any("Paid ACME 42." in m.all_text() for m in replies(after, ALICE, ts))
            assert api.assistant_thread(dm(ALICE), ts).status == ""
        await second.store.close()


async def test_without_the_scope_the_pane_still_answers(model: FakeOpenAIServer, llm: LlmService) -> None:
    """An app not granted ``assistant:write``: no status, no prompts, but the request is still answered, and the
    tool the agent asks for runs (a refused status never stops a call)."""
    tools = Tools()
    model.reply_tool_call("list_notes", {}, id="l1").reply_text("Hello!")
    api = SlackApiServer(
        TOKEN, team_id=TEAM, channels={WORK: "work", APPROVERS: "approvers"}, scopes=("chat:write", "im:history")
    )
    async with api, slack_world(pane_assistant(tools, llm), api=api, pane=True) as world:
        ts = await open_thread(world, ALICE)
        await world.slack.direct_message("list my notes", user=ALICE, thread_ts=ts)
        await world.bot.drain()
        assert any("Hello!" in m.text for m in replies(world, ALICE, ts))
        assert '"success": true' in model.requests[-1].body["messages"][-1]["content"]  # list_notes ran
        assert {c.response["error"] for c in api.calls("assistant.threads.setStatus")} == {"missing_scope"}  # type: ignore[index]


async def test_the_requester_withdraws_from_the_card_in_the_pane_thread(
    model: FakeOpenAIServer, llm: LlmService
) -> None:
    """A tap on the requester's copy inside the pane's thread comes from that thread: the request is withdrawn,
    every copy says so, and the tap is not taken for one from another conversation."""
    tools = Tools()
    model.reply_tool_call("pay", {"to": "ACME", "amount": 120}, id="p1").reply_text("Withdrawn, nothing was paid.")
    async with slack_world(pane_assistant(tools, llm), pane=True) as world:
        ts = await open_thread(world, ALICE)
        await world.slack.direct_message("pay ACME 120", user=ALICE, thread_ts=ts)
        await world.bot.drain()
        mine = next(m for m in replies(world, ALICE, ts) if m.buttons())
        await world.tap(mine, "Withdraw", user=ALICE)
        await world.bot.drain()
        card = world.last(APPROVERS)
        assert tools.paid == [] and card.buttons() == [] and mine.buttons() == []
        assert "does not belong" not in " ".join(world.ephemeral(ALICE))

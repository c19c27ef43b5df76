"""The kit inside a bolt app of the user's: their listeners run beside the kit's, through real slack-bolt."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from milpa_chat.bots.slack import SlackBot
from milpa_chat.testing import ManualClock
from milpa_chat.testing.slack import SlackApiServer, SlackEvents, serve_bolt_app

from .conftest_slack import ALICE, APPROVERS, SECRET, TEAM, TOKEN, WORK, Tools, memory_assistant, slack_world


@pytest.fixture
async def api() -> Any:
    async with SlackApiServer(TOKEN, team_id=TEAM, channels={WORK: "work", APPROVERS: "approvers"}) as server:
        yield server


async def test_a_users_message_listener_runs_and_the_kit_stays_silent() -> None:
    async with slack_world(memory_assistant(Tools(), ManualClock())) as world:

        @world.bot.app.message("hello")
        async def hello(message: dict[str, Any], say: Any) -> None:
            await say(f"Hi <@{message['user']}>, from your own listener")

        dm = "D" + ALICE[1:]

        def answers() -> list[str]:  # what the app showed Alice in the DM: messages and ephemeral ones
            return [m.text for m in world.api.messages(dm) if m.bot_id] + world.ephemeral(ALICE)

        await world.slack.direct_message("hello there", user=ALICE)
        await world.api.wait_for(answers)
        await world.bot.drain()
        assert answers() == [f"Hi <@{ALICE}>, from your own listener"]
        await world.slack.direct_message("what can you do?", user=ALICE)  # no listener of theirs: the kit's
        await world.api.wait_for(lambda: len(answers()) >= 2)
        await world.bot.drain()
        assert len(answers()) == 2 and "I work with commands" in answers()[1]


async def test_a_users_mention_listener_takes_mentions() -> None:
    async with slack_world(memory_assistant(Tools(), ManualClock())) as world:

        @world.bot.app.event("app_mention")
        async def mentioned(event: dict[str, Any], say: Any) -> None:
            await say("mentions are mine")

        await world.slack.app_mention("tools", user=ALICE, channel=WORK)
        await world.api.wait_for(lambda: [m for m in world.api.messages(WORK) if m.bot_id])
        await world.bot.drain()
        assert [m.text for m in world.api.messages(WORK) if m.bot_id] == ["mentions are mine"]
        assert world.ephemeral(ALICE) == []


async def test_install_adds_the_kit_to_the_users_own_app(api: SlackApiServer) -> None:
    app = AsyncApp(client=AsyncWebClient(token=TOKEN, base_url=api.base_url), signing_secret=SECRET)

    @app.command("/ping")
    async def ping(ack: Any, respond: Any) -> None:
        await ack()
        await respond("pong")

    tools = Tools()
    bot = SlackBot.install(app, memory_assistant(tools, ManualClock()))
    assert bot.app is app and bot.client is app.client and not bot.owns_app
    async with serve_bolt_app(app) as url, SlackEvents(url, SECRET, api=api) as slack:
        pong = await slack.command("/ping", "", user=ALICE, channel=WORK)
        assert pong.status == 200
        await slack.command("/milpa", "delete_note 4", user=ALICE, channel=WORK)
        await bot.drain()
        card = await api.wait_for_message(WORK, lambda m: bool(m.buttons()))
        assert "delete_note" in card.all_text()
        await bot.close()
    assert [m.text for m in api.ephemeral_messages(ALICE)] == ["pong"]  # through the response_url


async def test_configure_receives_the_app_before_it_serves(api: SlackApiServer) -> None:
    seen: list[str] = []

    def configure(app: AsyncApp) -> None:
        @app.command("/ping")
        async def ping(ack: Any, command: dict[str, Any]) -> None:
            await ack("pong")
            seen.append(command["user_id"])

    async with slack_world(memory_assistant(Tools(), ManualClock()), api=api, configure=configure) as world:
        answer = await world.slack.command("/ping", "", user=ALICE, channel=WORK)
        assert answer.status == 200 and seen == [ALICE]
        await world.command("tools", user=ALICE)
        assert world.ephemeral(ALICE) or world.api.messages(WORK)


def test_the_kits_wiring_logs_no_warning(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", TOKEN)  # as the runnable bot's users have it; bolt reads it itself
    with caplog.at_level(logging.WARNING):
        SlackBot(memory_assistant(Tools(), ManualClock()), TOKEN, SECRET)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []

"""Risk tiers on the platforms, through real python-telegram-bot and slack-bolt against the local servers: Approve on
a high-risk card asks for a typed reason (Telegram: a reply prompt; Slack: a modal), kept as the decision's note."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from milpa_chat import ToolRegistry
from milpa_chat.bots.slack import SlackBot
from milpa_chat.bots.telegram import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.store import MemoryStore
from milpa_chat.testing import BotApiServer, ManualClock
from milpa_chat.testing.slack import SlackApiServer, SlackEvents, serve_bolt_app

from .conftest_slack import APPROVERS, SECRET, TEAM, TOKEN, WORK, button
from .test_slack_edit import IDENTITIES, MATEO, TG_ALICE, TG_APPROVERS, TG_MARIA, Payments, World


@asynccontextmanager
async def world(clock: ManualClock) -> AsyncIterator[World]:
    registry = ToolRegistry(store=MemoryStore(clock=clock))
    payments = Payments()
    registry.scan(payments)
    assistant = Assistant(registry, Identities.from_dict(IDENTITIES), risk_tiers=True)
    async with BotApiServer() as tg, SlackApiServer(TOKEN, team_id=TEAM, channels=[WORK, APPROVERS]) as api:
        api.add_user(MATEO, "mateo", real_name="Mateo")
        tg.group(TG_APPROVERS, "Approvers", members=[TG_MARIA])
        telegram_bot = TelegramBot(assistant, tg.token, tg.base_url, sweep_interval=None)
        slack_bot = SlackBot(assistant, TOKEN, SECRET, api.base_url)
        await telegram_bot.start(poll_timeout=1)
        try:
            async with serve_bolt_app(slack_bot.web_app()) as url, SlackEvents(url, SECRET, api=api) as slack:
                yield World(tg, api, slack, slack_bot, payments)
        finally:
            await telegram_bot.stop()


async def test_telegram_asks_for_the_reason_with_a_reply_prompt() -> None:
    clock = ManualClock()
    async with world(clock) as w:
        asked = await w.tg.send_message(TG_ALICE.id, TG_ALICE, "/pay ACME 120")
        card = await w.tg.wait_for_message(TG_APPROVERS, since=asked)
        clock.advance(30)  # the card was read
        assert "High risk (changes data): approving needs a typed reason." in (card.text or "")
        tapped = await w.tg.tap_button(card, "✅ Approve", TG_MARIA)
        prompt = await w.tg.wait_for_message(TG_APPROVERS, since=tapped)
        assert "Maria: Why do you approve pay?" in (prompt.text or "") and w.payments.paid == []
        replied = await w.tg.send_message(TG_APPROVERS, TG_MARIA, "invoice 7 matches", reply_to=prompt)
        await w.tg.wait_for_message(TG_APPROVERS, since=replied)
        await w.tg.wait_until(lambda: w.payments.paid == [("ACME", 120.0)])
        await w.tg.wait_until(lambda: "invoice 7 matches" in (w.now(card).text or ""))


async def test_slack_asks_for_the_reason_in_a_modal() -> None:
    clock = ManualClock()
    async with world(clock) as w:
        asked = await w.tg.send_message(TG_ALICE.id, TG_ALICE, "/pay ACME 120")
        await w.tg.wait_for_message(TG_APPROVERS, since=asked)
        clock.advance(30)
        slack_card = await w.api.wait_for_message(APPROVERS)
        await w.slack.click(slack_card, button(slack_card, "Approve")["action_id"], user=MATEO)
        await w.slack_bot.drain()
        modal = w.api.views()[-1]
        assert modal.view["callback_id"] == "milpa_reason" and w.payments.paid == []
        empty = await w.slack.view_submission(modal, {"f:reason": ""}, user=MATEO)
        assert "typed reason" in json.loads(empty.text)["errors"]["f:reason"]
        done = await w.slack.view_submission(modal, {"f:reason": "budget line 4"}, user=MATEO)
        assert done.status == 200
        await w.slack_bot.drain()
        await w.api.wait_for(lambda: "Done" in slack_card.text)
        assert w.payments.paid == [("ACME", 120.0)] and "budget line 4" in slack_card.all_text()

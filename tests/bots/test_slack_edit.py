"""Edit before approve across surfaces, through real python-telegram-bot and slack-bolt against the local servers:
asked in Telegram, edited by an approver in a Slack modal, approved in Telegram by someone else."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from milpa_chat import ToolRegistry, VerifyPolicy, tool
from milpa_chat.bots.slack import SlackBot
from milpa_chat.bots.telegram import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.store import MemoryStore
from milpa_chat.testing import BotApiServer, ManualClock, TelegramMessage, TelegramUser
from milpa_chat.testing.slack import SlackApiServer, SlackEvents, serve_bolt_app

from .conftest_slack import APPROVERS, SECRET, TEAM, TOKEN, WORK, button

MATEO = "U2002"
TG_ALICE = TelegramUser(1001, "Alice", "alice")  # asks, and is an approver herself
TG_MARIA = TelegramUser(2001, "Maria", "maria")
TG_APPROVERS = -500
IDENTITIES: dict[str, Any] = {
    "roles": {"writer": ["payments:send"], "manager": ["payments:approve"]},
    "users": {
        "telegram:1001": ["writer", "manager"],
        "telegram:2001": ["manager"],
        f"slack:{TEAM}:{MATEO}": ["manager"],
    },
    "approvers": {"telegram": [str(TG_APPROVERS)], "slack": [APPROVERS]},
}


class Payments:
    def __init__(self) -> None:
        self.paid: list[tuple[str, float]] = []

    @tool(
        "pay",
        "Send a payment",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",), expires_in=600),
    )
    async def pay(self, to: str, amount: float) -> dict[str, Any]:
        if amount <= 0:
            raise ValueError("amount must be positive")
        self.paid.append((to, amount))
        return {"paid": amount, "to": to}


@dataclass
class World:
    tg: BotApiServer
    api: SlackApiServer
    slack: SlackEvents
    slack_bot: SlackBot
    payments: Payments

    def now(self, message: TelegramMessage) -> TelegramMessage:
        return self.tg.message(message.chat.id, message.message_id)


@asynccontextmanager
async def world() -> AsyncIterator[World]:
    registry = ToolRegistry(store=MemoryStore(clock=ManualClock()))
    payments = Payments()
    registry.scan(payments)
    assistant = Assistant(registry, Identities.from_dict(IDENTITIES), edits=True)
    async with BotApiServer() as tg, SlackApiServer(TOKEN, team_id=TEAM, channels=[WORK, APPROVERS]) as api:
        api.add_user(MATEO, "mateo", real_name="Mateo")
        tg.group(TG_APPROVERS, "Approvers", members=[TG_MARIA, TG_ALICE])
        telegram_bot = TelegramBot(assistant, tg.token, tg.base_url, sweep_interval=None)
        slack_bot = SlackBot(assistant, TOKEN, SECRET, api.base_url)
        await telegram_bot.start(poll_timeout=1)
        try:
            async with serve_bolt_app(slack_bot.web_app()) as url, SlackEvents(url, SECRET, api=api) as slack:
                yield World(tg, api, slack, slack_bot, payments)
        finally:
            await telegram_bot.stop()


async def test_an_approver_edits_the_amount_in_a_slack_modal_and_another_approver_approves_it() -> None:
    async with world() as w:
        asked = await w.tg.send_message(TG_ALICE.id, TG_ALICE, "/pay ACME 120")
        tg_group = await w.tg.wait_for_message(TG_APPROVERS, since=asked)
        slack_card = await w.api.wait_for_message(APPROVERS)

        await w.slack.click(slack_card, button(slack_card, "Edit")["action_id"], user=MATEO)
        await w.slack_bot.drain()
        modal = w.api.views()[-1]
        assert [b.get("block_id") for b in modal.view["blocks"] if b["type"] == "input"] == ["f:to", "f:amount"]
        amount = next(b for b in modal.view["blocks"] if b.get("block_id") == "f:amount")
        assert amount["element"]["initial_value"] == "120.0"  # prefilled with what would run

        # not a number: Slack gets errors per field and keeps the modal open; nothing changes
        refused = await w.slack.view_submission(modal, {"f:amount": "a lot"}, user=MATEO)
        answer = json.loads(refused.text)
        assert answer["response_action"] == "errors" and list(answer["errors"]) == ["f:amount"]
        assert "number" in answer["errors"]["f:amount"]

        taken = await w.slack.view_submission(modal, {"f:amount": "80"}, user=MATEO)
        assert taken.status == 200 and taken.text in ("", "null")  # an empty ack closes the modal
        await w.slack_bot.drain()
        # every copy shows the diff: the Telegram approvers' card and Slack's
        await w.tg.wait_until(lambda: "amount: 120.0 → 80.0" in (w.now(tg_group).text or ""))
        assert "Mateo" in (w.now(tg_group).text or "") and "amount: 120.0 → 80.0" in slack_card.all_text()

        # the requester (an approver too) is refused by four-eyes; so is the approver who edited
        mine = await w.tg.tap_button(w.now(tg_group), "✅ Approve", TG_ALICE)
        await w.tg.wait_until(lambda: w.tg.callback_query(mine).answered)
        assert "own request" in (w.tg.callback_query(mine).answer_text or "")
        await w.slack.click(slack_card, button(slack_card, "Approve")["action_id"], user=MATEO)
        await w.slack_bot.drain()
        assert "You edited this version" in w.api.ephemeral_messages(MATEO)[-1].text
        assert w.payments.paid == []

        approved = await w.tg.tap_button(w.now(tg_group), "✅ Approve", TG_MARIA)
        await w.tg.wait_until(lambda: w.tg.callback_query(approved).answered)
        await w.tg.wait_until(lambda: "Done" in (w.now(tg_group).text or ""))
        await w.api.wait_for(lambda: "Done" in slack_card.text)
        assert w.payments.paid == [("ACME", 80.0)]  # the edited arguments, once

"""One Approval, cards on two surfaces: TelegramBot (unmodified python-telegram-bot polling BotApiServer) and
SlackBot (slack-bolt over HTTP, SlackApiServer) run on one assistant and one store. Whoever decides first, on
either surface, wins; every card on both surfaces is edited to the decision."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from bots.tools import ExampleTools
from milpa_chat import ToolRegistry
from milpa_chat.bots.slack import SlackBot
from milpa_chat.bots.telegram import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.store import MemoryStore
from milpa_chat.testing import BotApiServer, ManualClock, TelegramMessage, TelegramUser
from milpa_chat.testing.slack import SlackApiServer, SlackEvents, serve_bolt_app

from .conftest_slack import ALICE, APPROVERS, MARIA, SECRET, TEAM, TOKEN, WORK, button

TG_ALICE = TelegramUser(1001, "Alice", "alice")
TG_MARIA = TelegramUser(2001, "Maria", "maria")
TG_APPROVERS = -500
IDENTITIES: dict[str, Any] = {
    "roles": {"writer": ["notes:read", "notes:write", "payments:send"], "manager": ["notes:read", "payments:approve"]},
    "users": {
        "telegram:1001": ["writer"],
        "telegram:2001": ["manager"],
        f"slack:{TEAM}:{ALICE}": ["writer"],
        f"slack:{TEAM}:{MARIA}": ["manager"],
    },
    "approvers": {"telegram": [str(TG_APPROVERS)], "slack": [APPROVERS]},
}


@dataclass
class Surfaces:
    tg: BotApiServer
    api: SlackApiServer
    slack: SlackEvents
    slack_bot: SlackBot
    runs: list[str]

    def tg_current(self, message: TelegramMessage) -> TelegramMessage:
        return self.tg.message(message.chat.id, message.message_id)

    def tg_label(self, message: TelegramMessage, word: str) -> str:
        return next(text for text in self.tg_current(message).button_labels if word.lower() in text.lower())


@asynccontextmanager
async def both_surfaces() -> AsyncIterator[Surfaces]:
    store = MemoryStore(clock=ManualClock())
    registry = ToolRegistry(store=store)
    registry.scan(ExampleTools(store))
    runs: list[str] = []
    registry.dispatcher.subscribe("tool.executed", lambda _e, p: runs.append(p["event"].name))
    assistant = Assistant(registry, Identities.from_dict(IDENTITIES))
    async with BotApiServer() as tg, SlackApiServer(TOKEN, team_id=TEAM, channels=[WORK, APPROVERS]) as api:
        tg.group(TG_APPROVERS, "Approvers", members=[TG_MARIA])
        telegram_bot = TelegramBot(assistant, tg.token, tg.base_url, sweep_interval=None)
        slack_bot = SlackBot(assistant, TOKEN, SECRET, api.base_url)
        await telegram_bot.start(poll_timeout=1)
        try:
            async with serve_bolt_app(slack_bot.web_app()) as url, SlackEvents(url, SECRET, api=api) as slack:
                yield Surfaces(tg, api, slack, slack_bot, runs)
        finally:
            await telegram_bot.stop()


def payments(runs: list[str]) -> int:
    return runs.count("send_payment")


async def test_requested_in_telegram_approved_in_slack_every_card_edited() -> None:
    async with both_surfaces() as s:
        asked = await s.tg.send_message(TG_ALICE.id, TG_ALICE, "/send_payment ACME 25")
        tg_mine = await s.tg.wait_for_message(TG_ALICE.id, since=asked)
        tg_group = await s.tg.wait_for_message(TG_APPROVERS, since=asked)
        slack_group = await s.api.wait_for_message(APPROVERS)
        assert "ACME" in slack_group.all_text() and "Alice" in slack_group.all_text() and payments(s.runs) == 0

        await s.slack.click(slack_group, button(slack_group, "Approve")["action_id"], user=MARIA)
        await s.tg.wait_until(
            lambda: any("Paid 25.00 EUR to ACME" in (m.text or "") for m in s.tg.messages(TG_ALICE.id))
        )
        await s.tg.wait_until(
            lambda: "Done" in (s.tg_current(tg_group).text or "") and "Done" in (s.tg_current(tg_mine).text or "")
        )
        await s.slack_bot.drain()
        for card in (s.tg_current(tg_group), s.tg_current(tg_mine)):
            assert card.button_labels == [] and "u2001 via Slack" in (card.text or "")
        assert slack_group.buttons() == [] and "Done" in slack_group.text and payments(s.runs) == 1

        # the Telegram approver taps their (now stale) card: already decided in Slack, nothing runs again
        update = await s.tg.tap(tg_group.chat.id, tg_group.message_id, TG_MARIA, f"approve:{_ref(slack_group)}")
        await s.tg.wait_until(lambda: s.tg.callback_query(update).answered)
        assert (s.tg.callback_query(update).answer_text or "").startswith("Already") and payments(s.runs) == 1


async def test_requested_in_slack_rejected_in_telegram_every_card_edited() -> None:
    async with both_surfaces() as s:
        await s.slack.command("/milpa", "send_payment ACME 40", user=ALICE, channel=WORK)
        await s.slack_bot.drain()
        slack_mine, slack_group = s.api.messages(WORK)[-1], s.api.messages(APPROVERS)[-1]
        tg_group = s.tg.last_message(TG_APPROVERS)
        # the requester's copy offers only Withdraw
        assert [b["action_id"] for b in slack_mine.buttons()] == ["milpa:cancel:0"]
        assert s.tg_current(tg_group).button_labels

        update = await s.tg.tap_button(tg_group, s.tg_label(tg_group, "Reject"), TG_MARIA)
        await s.tg.wait_until(lambda: s.tg.callback_query(update).answered)
        await s.api.wait_for(lambda: "Rejected" in slack_group.text and "Rejected" in slack_mine.text)
        told = await s.api.wait_for_message(WORK, lambda m: "rejected by Maria" in m.all_text())
        assert told.user == s.api.workspace.bot_user_id and slack_group.buttons() == []
        assert s.tg_current(tg_group).button_labels == [] and "Maria via Telegram" in slack_group.all_text()
        assert payments(s.runs) == 0

        first = slack_group.history[0]  # the card as first posted: a stale client taps Approve on it
        approve = next(e for b in first.blocks if b["type"] == "actions" for e in b["elements"])
        late = await s.slack.send(
            s.slack.payloads.block_action(
                approve, block_id="stale", user=MARIA, channel=APPROVERS, message_ts=slack_group.ts
            )
        )
        await s.slack_bot.drain()
        assert late.status == 200 and s.api.ephemeral_messages(MARIA)[-1].text.startswith("Already rejected")
        assert payments(s.runs) == 0


def _ref(slack_card: Any) -> str:
    """The approval id carried by a card's buttons (``"approve:<id>"``), as it was before the decision."""
    value = str(slack_card.history[0].blocks[-1]["elements"][0]["value"])
    return value.split(":", 1)[1]

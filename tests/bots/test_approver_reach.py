"""Approvers reached where they are, reminded and escalated, and how each decides — through real
python-telegram-bot and slack-bolt against the local servers, on one SQLite store and a manual clock.

* ``deliver="direct"``: each approver's direct messages (Telegram private chats, Slack DMs), never the
  requester's; a decision in one DM edits every other copy.
* ``deliver="both"``: the approver chats and the DMs; seeing a card confers nothing (a group member
  without the approver scope is refused).
* nobody reachable: the requester is told, and nothing runs.
* reminders and escalation across a restart (a new bot and assistant on the same file): once each.
* ``/approvals`` in chat: the approver's own figures.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from milpa_chat import ToolRegistry, VerifyPolicy, tool
from milpa_chat.bots.slack import SlackBot
from milpa_chat.bots.telegram import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.store import SqliteStore
from milpa_chat.testing import BotApiServer, ManualClock, TelegramMessage, TelegramUser
from milpa_chat.testing.slack import SlackApiServer, SlackEvents, SlackMessage, serve_bolt_app

from .conftest_slack import APPROVERS, SECRET, TEAM, TOKEN, WORK, button

ALICE = TelegramUser(1001, "Alice", "alice")  # asks for payments
MARIA = TelegramUser(2001, "Maria", "maria")  # approves
BRUNO = TelegramUser(2002, "Bruno", "bruno")  # approves; the escalation manager
EVE = TelegramUser(9999, "Eve", "eve")  # in the approvers' group, may approve nothing
MATEO = "U2002"  # approves, on Slack
TG_APPROVERS, TG_ESCALATION, SLACK_ESCALATION = -500, -700, "C0ESCALATE"
WAIT = 15.0
IDENTITIES: dict[str, Any] = {
    "roles": {"writer": ["payments:send"], "manager": ["payments:approve"]},
    "users": {
        "telegram:1001": ["writer"],
        "telegram:2001": ["manager"],
        "telegram:2002": ["manager"],
        f"slack:{TEAM}:{MATEO}": ["manager"],
    },
    "defaults": {"scopes": []},
    "approvers": {"telegram": [str(TG_APPROVERS)], "slack": [APPROVERS]},
    "escalation": {"telegram": [str(TG_ESCALATION)], "slack": [SLACK_ESCALATION]},
}
APPROVE = ("payments:approve",)


class Payments:
    def __init__(self) -> None:
        self.paid: list[tuple[str, str, float]] = []

    def _pay(self, how: str, to: str, amount: float) -> dict[str, Any]:
        self.paid.append((how, to, amount))
        return {"paid": amount, "to": to}

    @tool(
        "pay_direct",
        "Pay; approvers are asked in their direct messages",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=APPROVE, expires_in=900, deliver="direct"),
    )
    async def pay_direct(self, to: str, amount: float) -> dict[str, Any]:
        return self._pay("direct", to, amount)

    @tool(
        "pay_both",
        "Pay; approvers are asked in their chats and directly",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=APPROVE, expires_in=900, deliver="both"),
    )
    async def pay_both(self, to: str, amount: float) -> dict[str, Any]:
        return self._pay("both", to, amount)

    @tool(
        "pay_late",
        "Pay; approvers are reminded, then it is escalated",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=APPROVE, expires_in=900, remind_after=(60,), escalate_after=300),
    )
    async def pay_late(self, to: str, amount: float) -> dict[str, Any]:
        return self._pay("late", to, amount)


@dataclass
class World:
    tg: BotApiServer
    api: SlackApiServer | None
    slack: SlackEvents | None
    assistant: Assistant
    telegram_bot: TelegramBot
    slack_bot: SlackBot | None
    payments: Payments
    clock: ManualClock

    async def ask(self, text: str) -> TelegramMessage:
        """Alice writes ``text`` in her private chat; the bot's first answer."""
        update = await self.tg.send_message(ALICE.id, ALICE, text)
        return await self.tg.wait_for_message(ALICE.id, since=update, timeout=WAIT)

    def now(self, message: TelegramMessage) -> TelegramMessage:
        return self.tg.message(message.chat.id, message.message_id)

    async def tap(self, message: TelegramMessage, word: str, user: TelegramUser) -> str:
        label = next(b for b in self.now(message).button_labels if word.lower() in b.lower())
        update = await self.tg.tap_button(self.now(message), label, user)
        query = self.tg.callback_query(update)
        await self.tg.wait_until(lambda: query.answered, WAIT, what="the tap's answer")
        return query.answer_text or ""

    def cards_in(self, chat_id: int) -> list[TelegramMessage]:
        return [m for m in self.tg.messages(chat_id) if "Approval needed" in (m.text or "")]

    def slack_cards_in(self, channel: str) -> list[SlackMessage]:
        assert self.api is not None
        return [m for m in self.api.messages(channel) if "Approval needed" in m.all_text()]


@asynccontextmanager
async def world(
    db: Path, clock: ManualClock, payments: Payments, *, slack: bool = True, direct_chats: bool = True
) -> AsyncIterator[World]:
    """One assistant with both surfaces (or Telegram alone) on the SQLite file ``db``; neither bot runs a
    sweeper: the tests sweep themselves and count what each sweep did (a background one would race them)."""
    store = SqliteStore(db, clock=clock)
    registry = ToolRegistry(store=store)
    registry.scan(payments)
    assistant = Assistant(registry, Identities.from_dict(IDENTITIES), approval_ttl=900)
    async with BotApiServer() as tg:
        tg.private_chat(ALICE)
        if direct_chats:  # the approvers have started the bot (Telegram lets a bot write only then)
            tg.private_chat(MARIA)
            tg.private_chat(BRUNO)
        tg.group(TG_APPROVERS, "Approvers", members=[MARIA, BRUNO, EVE])
        tg.group(TG_ESCALATION, "Escalation", members=[BRUNO])
        telegram_bot = TelegramBot(assistant, tg.token, tg.base_url, sweep_interval=None)
        await telegram_bot.start(poll_timeout=1)
        try:
            if not slack:
                yield World(tg, None, None, assistant, telegram_bot, None, payments, clock)
                return
            async with SlackApiServer(TOKEN, team_id=TEAM, channels=[WORK, APPROVERS, SLACK_ESCALATION]) as api:
                api.add_user(MATEO, "mateo", real_name="Mateo")
                slack_bot = SlackBot(assistant, TOKEN, SECRET, api.base_url, sweep_interval=None)
                async with serve_bolt_app(slack_bot.web_app()) as url, SlackEvents(url, SECRET, api=api) as events:
                    yield World(tg, api, events, assistant, telegram_bot, slack_bot, payments, clock)
                    await slack_bot.drain()
        finally:
            await telegram_bot.stop()
            await store.close()


async def test_direct_delivery_reaches_each_approver_and_one_decision_edits_every_copy(tmp_path: Path) -> None:
    payments = Payments()
    async with world(tmp_path / "bot.db", ManualClock(), payments) as w:
        assert w.api is not None and w.slack is not None and w.slack_bot is not None
        waiting = await w.ask("/pay_direct ACME 20")
        await w.tg.wait_until(lambda: w.cards_in(MARIA.id) and w.cards_in(BRUNO.id), WAIT, what="both DMs")
        slack_dm = await w.api.wait_for(lambda: next(iter(w.slack_cards_in("D" + MATEO[1:])), None), WAIT)

        assert w.cards_in(TG_APPROVERS) == [] and w.slack_cards_in(APPROVERS) == []  # no channel copy
        # the requester's own chat has her copy (Withdraw), never an approver's card
        assert [m.message_id for m in w.cards_in(ALICE.id)] == [waiting.message_id]
        assert not any("Approve" in b for b in w.now(waiting).button_labels), w.now(waiting).button_labels

        copies = (w.cards_in(MARIA.id)[0], w.cards_in(BRUNO.id)[0])
        await w.slack.click(slack_dm, button(slack_dm, "Approve")["action_id"], user=MATEO)
        await w.slack_bot.drain()
        for copy in copies:
            await w.tg.wait_until(
                functools.partial(lambda c: "Mateo" in (w.now(c).text or "") and not w.now(c).button_labels, copy),
                WAIT,
                what="every Telegram copy edited with Mateo's decision",
            )
        assert payments.paid == [("direct", "ACME", 20.0)]


async def test_both_reaches_chats_and_people_and_seeing_a_card_confers_nothing(tmp_path: Path) -> None:
    payments = Payments()
    async with world(tmp_path / "bot.db", ManualClock(), payments) as w:
        assert w.api is not None
        await w.ask("/pay_both ACME 35")
        await w.tg.wait_until(
            lambda: w.cards_in(TG_APPROVERS) and w.cards_in(MARIA.id) and w.cards_in(BRUNO.id),
            WAIT,
            what="the group's card and both DMs",
        )
        await w.api.wait_for(lambda: w.slack_cards_in(APPROVERS) and w.slack_cards_in("D" + MATEO[1:]), WAIT)

        group_card = w.cards_in(TG_APPROVERS)[0]
        refused = await w.tap(group_card, "Approve", EVE)
        assert refused.startswith("You cannot approve this request") and "payments:approve" in refused, refused
        assert payments.paid == [] and w.now(group_card).button_labels  # still pending, still offered

        maria_card = w.cards_in(MARIA.id)[0]
        await w.tap(maria_card, "Approve", MARIA)
        await w.tg.wait_until(
            lambda: "Maria" in (w.now(group_card).text or "") and not w.now(group_card).button_labels,
            WAIT,
            what="the group's copy edited with Maria's decision",
        )
        assert payments.paid == [("both", "ACME", 35.0)]


async def test_when_no_approver_can_be_reached_the_requester_is_told_and_nothing_runs(tmp_path: Path) -> None:
    payments = Payments()
    async with world(tmp_path / "bot.db", ManualClock(), payments, slack=False, direct_chats=False) as w:
        waiting = await w.ask("/pay_direct ACME 20")
        await w.tg.wait_until(
            lambda: "No approver could be reached" in (w.now(waiting).text or ""),
            WAIT,
            what="the requester's copy saying nobody could be reached",
        )
        refused = [c for c in w.tg.calls if c.method == "sendMessage" and not c.ok]
        assert {str(c.params.get("chat_id")) for c in refused} >= {str(MARIA.id), str(BRUNO.id)}  # both DMs refused
        assert payments.paid == []


async def test_reminder_then_escalation_once_each_across_a_restart(tmp_path: Path) -> None:
    db, clock, payments = tmp_path / "bot.db", ManualClock(), Payments()
    async with world(db, clock, payments) as w:
        await w.ask("/pay_late ACME 50")
        await w.tg.wait_until(lambda: w.cards_in(TG_APPROVERS), WAIT, what="the first card")
        clock.now += 61
        assert await w.assistant.sweep() == 1
        await w.tg.wait_until(lambda: len(w.cards_in(TG_APPROVERS)) == 2, WAIT, what="the reminder's fresh copy")
        assert await w.assistant.sweep() == 0  # reminded once
        assert len(w.slack_cards_in(APPROVERS)) == 2
        assert w.cards_in(TG_ESCALATION) == []

    async with world(db, clock, payments) as w:  # a restart: new bot, new assistant, same file
        assert await w.assistant.sweep() == 0  # the reminder is not sent again
        clock.now += 240  # 301 s without a decision
        assert await w.assistant.sweep() == 1
        await w.tg.wait_until(lambda: w.cards_in(TG_ESCALATION), WAIT, what="the escalation card")
        assert w.api is not None
        await w.api.wait_for(lambda: w.slack_cards_in(SLACK_ESCALATION), WAIT)
        told = await w.tg.wait_until(
            lambda: next((m for m in w.tg.messages(ALICE.id) if "escalat" in (m.text or "").lower()), None),
            WAIT,
            what="the requester told of the escalation",
        )
        assert told is not None
        assert await w.assistant.sweep() == 0  # escalated once

        escalated = w.cards_in(TG_ESCALATION)[0]
        await w.tap(escalated, "Approve", BRUNO)
        await w.tg.wait_until(lambda: payments.paid != [], WAIT, what="the approved payment")
        assert payments.paid == [("late", "ACME", 50.0)]


async def test_an_approver_sees_how_they_decide_with_approvals_in_chat(tmp_path: Path) -> None:
    payments, clock = Payments(), ManualClock()
    async with world(tmp_path / "bot.db", clock, payments, slack=False) as w:
        for amount in (10, 11):
            await w.ask(f"/pay_both ACME {amount}")
            await w.tg.wait_until(
                functools.partial(lambda a: any(f"{a}" in (c.text or "") for c in w.cards_in(MARIA.id)), amount), WAIT
            )
        first, second = w.cards_in(MARIA.id)[-2:]
        clock.now += 1  # decided in a second: faster than a card can be read
        await w.tap(first, "Approve", MARIA)
        clock.now += 40
        await w.tap(second, "Reject", MARIA)
        await w.tg.wait_until(lambda: len(payments.paid) == 1, WAIT)

        update = await w.tg.send_message(MARIA.id, MARIA, "/approvals")
        stats = await w.tg.wait_for_message(MARIA.id, since=update, timeout=WAIT)
        text = stats.text or ""
        assert "Maria" in text and "2 decisions" in text, text
        assert "50%" in text or "50 %" in text, text  # one approved of two
        assert "faster" in text.lower(), text  # the approval decided faster than it can be read


async def test_without_edits_a_forged_edit_tap_changes_nothing(tmp_path: Path) -> None:
    """``Assistant(edits=False)`` (the default): no card offers Edit, and a tap whose data says ``edit:<id>``
    anyway — made by a modified client — is refused: no prompt, the arguments stay as asked."""
    payments = Payments()
    async with world(tmp_path / "bot.db", ManualClock(), payments, slack=False) as w:
        await w.ask("/pay_both ACME 35")
        await w.tg.wait_until(lambda: w.cards_in(MARIA.id), WAIT, what="Maria's card")
        card = w.cards_in(MARIA.id)[0]
        assert not any("Edit" in b for b in card.button_labels)
        [approval] = await w.assistant.approvals.listing()
        mark = w.tg.mark()
        update = await w.tg.tap(MARIA.id, card.message_id, MARIA, f"edit:{approval.id}")
        query = w.tg.callback_query(update)
        await w.tg.wait_until(lambda: query.answered, WAIT, what="the refusal")
        assert query.answer_text == "This button is not valid any more."
        assert not [c for c in w.tg.calls[mark:] if c.method == "sendMessage"]  # no reply prompt
        assert (await w.assistant.approvals.get(approval.id)).args == {"to": "ACME", "amount": 35.0}  # type: ignore[union-attr]

"""Forged taps: a modified client sends, from a card it was shown, button data naming *another* approval (a
finished or rejected one, or someone else's pending one). The tap is refused: no decision, and no message changes
on either platform (the copy tapped is never "repaired" from a record it does not belong to).

TelegramBot (unmodified python-telegram-bot polling BotApiServer) and SlackBot (slack-bolt over HTTP, signed
requests, SlackApiServer) run on one assistant; every tap goes through the platform's own payload: Telegram's
``callback_query.message`` and Slack's ``message`` carry the tapped message as it is."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from bots.tools import ExampleTools
from milpa_chat import ToolRegistry
from milpa_chat.bots.slack import SlackBot
from milpa_chat.bots.telegram import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.runtime.approval import COLLECTION
from milpa_chat.store import MemoryStore
from milpa_chat.testing import BotApiServer, ManualClock, TelegramMessage, TelegramUser
from milpa_chat.testing.slack import SlackApiServer, SlackEvents, SlackMessage, serve_bolt_app

from .conftest_slack import ALICE, APPROVERS, BOB, MARIA, SECRET, TEAM, TOKEN, WORK, button

TG_ALICE, TG_BOB, TG_MARIA = (
    TelegramUser(1001, "Alice", "alice"),
    TelegramUser(1002, "Bob", "bob"),
    TelegramUser(2001, "Maria", "maria"),
)
TG_APPROVERS = -500
IDENTITIES: dict[str, Any] = {
    "roles": {"writer": ["notes:read", "notes:write", "payments:send"], "manager": ["notes:read", "payments:approve"]},
    "users": {
        "telegram:1001": ["writer"],
        "telegram:1002": ["writer"],
        "telegram:2001": ["manager"],
        f"slack:{TEAM}:{ALICE}": ["writer"],
        f"slack:{TEAM}:{BOB}": ["writer"],
        f"slack:{TEAM}:{MARIA}": ["manager"],
    },
    "approvers": {"telegram": [str(TG_APPROVERS)], "slack": [APPROVERS]},
}
WAIT = 15.0
NOT_THIS_MESSAGE = "This button does not belong to this message."


@dataclass
class World:
    tg: BotApiServer
    api: SlackApiServer
    slack: SlackEvents
    slack_bot: SlackBot
    assistant: Assistant
    runs: list[str]

    async def tg_ask(self, user: TelegramUser, text: str) -> TelegramMessage:
        """``user`` sends ``text``; the card (a message with buttons) the bot answers with."""
        known = {m.message_id for m in self.tg.messages(user.id)}
        await self.tg.send_message(user.id, user, text)
        return await self.tg.wait_until(
            lambda: next((m for m in self.tg.messages(user.id) if m.message_id not in known and m.buttons), None), WAIT
        )

    async def tg_tap(self, message: TelegramMessage, word: str, user: TelegramUser) -> None:
        now = self.tg.message(message.chat.id, message.message_id)
        label = next(t for t in now.button_labels if word.lower() in t.lower())
        update = await self.tg.tap_button(now, label, user)
        await self.tg.wait_until(lambda: self.tg.callback_query(update).answered, WAIT)

    async def slack_ask(self, user: str, text: str) -> SlackMessage:
        before = len(self.api.messages(WORK))
        await self.slack.command("/milpa", text, user=user, channel=WORK)
        await self.slack_bot.drain()
        return await self.api.wait_for_message(
            WORK, lambda m: len(self.api.messages(WORK)) > before and bool(m.buttons()), timeout=WAIT
        )

    async def slack_tap(self, message: SlackMessage, label: str, user: str) -> None:
        await self.slack.click(message, button(message, label)["action_id"], user=user)
        await self.slack_bot.drain()

    def seen(self) -> str:
        """Every message on both platforms as its people see it (text, buttons), and every edit call made."""
        tg = {
            chat: [(m.message_id, m.text, m.reply_markup) for m in self.tg.messages(chat)]
            for chat in (TG_ALICE.id, TG_BOB.id, TG_APPROVERS)
        }
        slack = {ch: [(m.ts, m.text, m.blocks) for m in self.api.messages(ch)] for ch in (WORK, APPROVERS)}
        return json.dumps([tg, slack], sort_keys=True, default=str)

    def edits(self) -> int:
        tg = [c for c in self.tg.calls if c.method.lower().startswith("editmessage")]
        return len(tg) + len(self.api.calls("chat.update"))

    async def records(self) -> dict[str, Any]:
        """Every approval record as decided (its ``cards``, the delivery bookkeeping, go on in the background)."""
        return {
            r.key: {k: v for k, v in r.value.items() if k != "cards"}
            for r in await self.assistant.store.scan(COLLECTION)
        }


@asynccontextmanager
async def world() -> AsyncIterator[World]:
    store = MemoryStore(clock=ManualClock())
    registry = ToolRegistry(store=store)
    registry.scan(ExampleTools(store, slow_seconds=0.1))
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
                yield World(tg, api, slack, slack_bot, assistant, runs)
        finally:
            await telegram_bot.stop()
            await slack_bot.close()


def approval_id(data: str) -> str:
    return data.partition(":")[2].partition(".")[0]


async def requests(w: World) -> tuple[dict[str, Any], list[str]]:
    """Pending cards to tap on (the message, who taps it) and the ids of other approvals: finished,
    rejected and other people's pending ones, requested on both platforms."""

    def tg_id(message: TelegramMessage) -> str:
        return approval_id(str(message.buttons[0][0]["callback_data"]))

    def slack_id(message: SlackMessage) -> str:
        return approval_id(str(message.buttons()[0]["value"]))

    done_tg = await w.tg_ask(TG_ALICE, "/delete_note 7")
    ids = [tg_id(done_tg)]
    await w.tg_tap(done_tg, "Confirm", TG_ALICE)
    done_slack = await w.slack_ask(ALICE, "delete_note 3")
    ids.append(slack_id(done_slack))
    await w.slack_tap(done_slack, "Confirm", ALICE)
    rejected = await w.tg_ask(TG_ALICE, "/send_payment Initech 30")
    ids.append(tg_id(rejected))
    group = await w.tg.wait_for_message(TG_APPROVERS, timeout=WAIT)
    await w.tg_tap(group, "Reject", TG_MARIA)
    ids.append(tg_id(await w.tg_ask(TG_BOB, "/send_payment Globex 20")))
    ids.append(slack_id(await w.slack_ask(BOB, "send_payment Umbrella 40")))
    tg_confirm = await w.tg_ask(TG_ALICE, "/delete_note 5")
    slack_confirm = await w.slack_ask(ALICE, "delete_note 4")
    tg_mine = await w.tg_ask(TG_ALICE, "/send_payment ACME 10")
    tg_group = await w.tg.wait_until(
        lambda: next((m for m in w.tg.messages(TG_APPROVERS) if "ACME" in (m.text or "")), None), WAIT
    )
    slack_group = await w.api.wait_for_message(APPROVERS, lambda m: "ACME" in m.all_text(), timeout=WAIT)
    await w.tg.wait_until(lambda: w.runs.count("delete_note") == 2, WAIT)
    others = sorted(set(ids))
    targets = {
        "telegram": [(tg_confirm, TG_ALICE), (tg_mine, TG_ALICE), (tg_group, TG_MARIA)],
        "slack": [(slack_confirm, ALICE), (slack_group, MARIA)],
    }
    return targets, others


async def forge_telegram(w: World, targets: list[tuple[TelegramMessage, TelegramUser]], data: list[str]) -> list[Any]:
    """Taps in rounds of 20 (people tapping, not a queue of minutes): each round is answered before the next."""
    taps: list[Any] = []
    pairs = list(zip(itertools.cycle(targets), data, strict=False))
    for start in range(0, len(pairs), 20):
        batch = [await w.tg.tap(m.chat.id, m.message_id, u, d) for (m, u), d in pairs[start : start + 20]]
        await w.tg.wait_until(lambda b=batch: all(w.tg.callback_query(t).answered for t in b), WAIT)  # type: ignore[misc]
        taps += batch
    return taps


async def forge_slack(w: World, targets: list[tuple[SlackMessage, str]], data: list[str]) -> None:
    action_ids = {m.ts: m.buttons()[0]["action_id"] for m, _ in targets}

    async def one(n: int, message: SlackMessage, user: str, forged: str) -> None:
        now = w.api.messages(message.channel)
        current = next(m for m in now if m.ts == message.ts)  # Slack sends the message as it is now
        request = w.slack.payloads.block_action(
            {
                "type": "button",
                "action_id": action_ids[current.ts],
                "value": forged,
                "action_ts": f"{time.time():.0f}.{n}",
            },
            block_id="forged",
            user=user,
            channel=current.channel,
            message_ts=current.ts,
            message=current.to_api(),
        )
        response = await w.slack.send(request)
        assert response.status == 200

    jobs = [one(n, m, u, d) for n, ((m, u), d) in enumerate(zip(itertools.cycle(targets), data, strict=False))]
    for start in range(0, len(jobs), 50):
        await asyncio.gather(*jobs[start : start + 50])
    await w.slack_bot.drain()


async def test_a_thousand_forged_taps_naming_other_approvals_change_no_message_and_decide_nothing() -> None:
    async with world() as w:
        targets, others = await requests(w)
        assert len(others) == 5  # two finished, one rejected, two pending of Bob
        forged = [f"{action}:{aid}" for aid in others for action in ("confirm", "cancel", "approve", "reject")]
        before, edits, records, runs = w.seen(), w.edits(), await w.records(), list(w.runs)
        whispers = len(w.api.ephemeral_messages())

        started = time.monotonic()
        taps = await forge_telegram(w, targets["telegram"], [forged[i % len(forged)] for i in range(500)])
        telegram = time.monotonic() - started
        await forge_slack(w, targets["slack"], [forged[i % len(forged)] for i in range(500)])
        elapsed = time.monotonic() - started
        print(f"telegram {telegram:.1f} s, slack {elapsed - telegram:.1f} s")

        changed = w.edits() - edits
        assert changed == 0 and w.seen() == before
        assert await w.records() == records and w.runs == runs
        answers = {w.tg.callback_query(t).answer_text for t in taps}
        refused = [m.text for m in w.api.ephemeral_messages()[whispers:]]
        assert answers == {NOT_THIS_MESSAGE} and refused == [NOT_THIS_MESSAGE] * 500
        print(f"1000 forged taps naming other approvals → {changed} messages changed (0 decisions; {elapsed:.1f} s)")

        # the cards tapped still work for who they are for
        tg_confirm, _ = targets["telegram"][0]
        await w.tg_tap(tg_confirm, "Confirm", TG_ALICE)
        await w.tg.wait_until(lambda: w.runs.count("delete_note") == 3, WAIT)
        slack_group, _ = targets["slack"][1]
        await w.slack_tap(slack_group, "Approve", MARIA)
        await w.tg.wait_until(lambda: w.runs.count("send_payment") == 1, WAIT)


async def test_where_the_platform_does_not_report_the_message_decisions_are_checked_and_nothing_is_repaired() -> None:
    """A Telegram message too old to be reported (``InaccessibleMessage``) and a Slack tap without the message
    (an ephemeral one): whose buttons they show is unknown, so the one decision function decides as always,
    and no message is edited on the strength of the data the tap carried."""
    async with world() as w:
        done = await w.tg_ask(TG_ALICE, "/delete_note 7")
        done_data = str(done.buttons[0][0]["callback_data"])
        await w.tg_tap(done, "Confirm", TG_ALICE)
        card = await w.tg_ask(TG_ALICE, "/delete_note 5")
        confirm = str(card.buttons[0][0]["callback_data"])
        slack_done = await w.slack_ask(ALICE, "delete_note 3")
        slack_done_data = str(slack_done.buttons()[0]["value"])
        await w.slack_tap(slack_done, "Confirm", ALICE)
        slack_card = await w.slack_ask(ALICE, "delete_note 4")
        await w.tg.wait_until(lambda: w.runs.count("delete_note") == 2, WAIT)
        before, edits = w.seen(), w.edits()

        old = await w.tg.tap(card.chat.id, card.message_id, TG_ALICE, done_data, inaccessible=True)
        await w.tg.wait_until(lambda: w.tg.callback_query(old).answered, WAIT)
        whispers = len(w.api.ephemeral_messages(ALICE))
        request = w.slack.payloads.block_action(
            {"type": "button", "action_id": slack_card.buttons()[0]["action_id"], "value": slack_done_data},
            block_id="b",
            user=ALICE,
            channel=WORK,
            message_ts=slack_card.ts,
            ephemeral=True,
        )
        await w.slack.send(request)
        await w.slack_bot.drain()
        assert w.tg.callback_query(old).answer_text == "Already done."
        assert [m.text for m in w.api.ephemeral_messages(ALICE)[whispers:]] == ["Already done."]
        assert w.edits() == edits and w.seen() == before and w.runs.count("delete_note") == 2

        # the same kind of tap with the card's own data decides as the person who tapped
        mine = await w.tg.tap(card.chat.id, card.message_id, TG_ALICE, confirm, inaccessible=True)
        await w.tg.wait_until(lambda: w.tg.callback_query(mine).answered, WAIT)
        assert w.tg.callback_query(mine).answer_text == "Confirmed — running it now."
        await w.tg.wait_until(lambda: w.runs.count("delete_note") == 3, WAIT)

"""The people and the chaos of the fleet's chaos test.

Requesters send commands on Telegram (to the local Bot API server, which delivers them to the balancer's
webhook URL) and on Slack (signed requests POSTed to the balancer). People look at their chats and tap
what they see: an approver taps Approve or Reject on a payment's card, a requester Confirm or Cancel on
their own card; a card that still shows its buttons a few seconds after a tap is tapped again (the tap
was lost with a worker). Telegram redelivers some updates and retries the ones a dead worker refused;
Slack retries some requests as it does after a slow or failed answer. Meanwhile the chaos loop
SIGKILLs workers and restarts them, and terminates the workers' PostgreSQL backends.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from milpa_chat.renderers.model import parse_callback_data
from milpa_chat.testing import TelegramMessage, TelegramUser
from milpa_chat.testing.slack import SlackAckTimeout, SlackMessage, SlackRequest

from ._fleet import (
    SLACK_APPROVERS,
    SLACK_MANAGERS,
    SLACK_WORK,
    SLACK_WRITERS,
    TEAM,
    TG_APPROVERS,
    TG_MANAGERS,
    TG_WRITERS,
    Fleet,
    admin,
)

DECIDING = {"approve", "reject", "confirm"}
RESCUING = {"run_again", "mark_done"}
RETAP_AFTER = 4.0


@dataclass
class Card:
    """A copy of an approval card as a person sees it now."""

    surface: str
    chat: str
    message_id: str
    approval_id: str
    actions: dict[str, str]  # action -> the button's action_id (Slack) or callback data (Telegram)
    raw: TelegramMessage | SlackMessage


@dataclass
class Tally:
    requests: int = 0
    redeliveries: int = 0
    retries: int = 0
    taps: int = 0
    kills: int = 0
    restarts: int = 0
    terminated_backends: int = 0
    first_tap: dict[str, float] = field(default_factory=dict)
    last_tap: dict[str, float] = field(default_factory=dict)
    decided_seen: dict[str, float] = field(default_factory=dict)
    tapped_on: dict[str, str] = field(default_factory=dict)
    stale_copies_tapped: int = 0
    rescues: int = 0


def _actions(buttons: list[tuple[str, str]]) -> tuple[dict[str, str], str | None]:
    """``(action -> what to send back, approval id)`` of a card's buttons (``data`` is ``action:id``)."""
    actions, ref = {}, None
    for data, handle in buttons:
        try:
            action, ref = parse_callback_data(data)
        except ValueError:
            continue
        actions[action] = handle
    return actions, ref


def telegram_cards(fleet: Fleet) -> list[Card]:
    found = []
    for chat in [TG_APPROVERS, *(u.id for u in TG_WRITERS)]:
        for m in fleet.tg.messages(chat):
            actions, ref = _actions(
                [(str(b.get("callback_data", "")), str(b.get("callback_data", ""))) for row in m.buttons for b in row]
            )
            if ref is not None:
                found.append(Card("telegram", str(chat), str(m.message_id), ref, actions, m))
    return found


def slack_cards(fleet: Fleet) -> list[Card]:
    found = []
    for channel in (SLACK_APPROVERS, SLACK_WORK):
        for m in fleet.api.messages(channel):
            actions, ref = _actions([(str(b.get("value", "")), str(b.get("action_id", ""))) for b in m.buttons()])
            if ref is not None:
                found.append(Card("slack", channel, m.ts, ref, actions, m))
    return found


class People:
    """Everyone using the fleet, driven by one seeded random generator."""

    def __init__(
        self,
        fleet: Fleet,
        seed: int,
        record_of: Callable[[str], Awaitable[dict[str, Any] | None]],
        ran: Callable[[str], Awaitable[int | None]],
    ) -> None:
        self.fleet = fleet
        self.seed = seed
        self.rng = random.Random(seed)
        self.tally = Tally()
        self.record_of = record_of
        self.ran = ran
        self._tasks: set[asyncio.Task[Any]] = set()

    def later(self, work: Awaitable[Any]) -> None:
        async def run() -> None:
            # a person whose request failed tries again on the next round
            with contextlib.suppress(aiohttp.ClientError, SlackAckTimeout, TimeoutError, LookupError):
                await work

        task = asyncio.ensure_future(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def finish(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # ----------------------------------------------------------- requests
    async def ask(self, until: float) -> None:
        n = 0
        while time.monotonic() < until:
            n += 1
            command = self.rng.choice(["pay"] * 5 + ["archive"] * 2 + ["slow"] * 2 + ["status"])
            text = {
                "pay": f"pay ACME{n} {self.rng.randint(1, 900)}",
                "archive": f"archive {n}",
                "slow": f"slow_archive {n} 2.5",
                "status": "status",
            }
            if self.rng.random() < 0.5:
                self.later(self.telegram_say(self.rng.choice(TG_WRITERS), "/" + text[command]))
            else:
                self.later(self.slack_say(self.rng.choice(SLACK_WRITERS), text[command]))
            await asyncio.sleep(self.rng.uniform(0.25, 0.6))

    async def telegram_say(self, user: TelegramUser, text: str) -> None:
        self.tally.requests += 1
        update = await self.fleet.tg.send_message(user.id, user, text)
        if self.rng.random() < 0.2:
            await asyncio.sleep(0.3)
            self.tally.redeliveries += 1
            await self.fleet.tg.redeliver(update)

    async def slack_send(self, request: SlackRequest) -> None:
        """Deliver as Slack does: retried (up to 3 times) while the answer is an error or late."""
        for attempt in range(4):
            try:
                answer = await (
                    self.fleet.slack.send(request)
                    if attempt == 0
                    else self.fleet.slack.send(request, retry_num=attempt, retry_reason="http_error")
                )
                if answer.status == 200:
                    if self.rng.random() < 0.2:  # acknowledged, but Slack retries anyway (it saw it late)
                        self.tally.redeliveries += 1
                        await self.fleet.slack.retry(answer, num=attempt + 1, reason="http_timeout")
                    return
            except (aiohttp.ClientError, SlackAckTimeout):
                pass
            self.tally.retries += 1
            await asyncio.sleep(1.0)

    async def slack_say(self, user: str, text: str) -> None:
        self.tally.requests += 1
        await self.slack_send(self.fleet.slack.payloads.command("/milpa", text, user=user, channel=SLACK_WORK))

    async def telegram_retries(self, until: float) -> None:
        """Telegram keeps retrying the updates the webhook refused (a dead worker, the balancer's 503)."""
        while time.monotonic() < until:
            if self.fleet.tg.feed.pending:
                self.tally.retries += 1
                await self.fleet.tg.deliver_pending()
            await asyncio.sleep(0.5)

    # --------------------------------------------------------------- taps
    def choice(self, approval_id: str) -> random.Random:
        return random.Random(f"{self.seed}:{approval_id}")

    async def look_and_tap(self, until: float) -> None:
        while time.monotonic() < until:
            cards = telegram_cards(self.fleet) + slack_cards(self.fleet)
            now = time.monotonic()
            self.notice_decided(now)
            by_id: dict[str, list[Card]] = {}
            uncertain: dict[str, Card] = {}
            for card in cards:
                if DECIDING & set(card.actions):
                    by_id.setdefault(card.approval_id, []).append(card)
                elif set(card.actions) >= RESCUING:
                    uncertain[card.approval_id] = card
            for approval_id, open_cards in by_id.items():
                if now - self.tally.last_tap.get(approval_id, -1e9) >= RETAP_AFTER:
                    await self.tap(approval_id, open_cards, now)
            for approval_id, card in uncertain.items():
                if now - self.tally.last_tap.get(f"rescue:{approval_id}", -1e9) >= RETAP_AFTER:
                    await self.rescue(card, now)
            await asyncio.sleep(0.3)

    def notice_decided(self, now: float) -> None:
        """A tapped copy that no longer offers a decision: the person sees the outcome."""
        for aid, where in self.tally.tapped_on.items():
            if aid in self.tally.decided_seen:
                continue
            surface, chat, message_id = where.split(":", 2)
            message = (
                self.fleet.tg.message(int(chat), int(message_id))
                if surface == "telegram"
                else self.fleet.api.message(chat, message_id)
            )
            data = (
                [str(b.get("callback_data", "")) for row in message.buttons for b in row]
                if isinstance(message, TelegramMessage)
                else [str(b.get("value", "")) for b in message.buttons()]
            )
            if not DECIDING & set(_actions([(d, d) for d in data])[0]):
                self.tally.decided_seen[aid] = now

    async def tap(self, approval_id: str, cards: list[Card], now: float) -> None:
        rng = self.choice(approval_id)
        verification = any("approve" in c.actions for c in cards)
        action = (
            ("approve" if rng.random() < 0.75 else "reject")
            if verification
            else ("confirm" if rng.random() < 0.8 else "cancel")
        )
        preferred = rng.choice(["telegram", "slack"])
        usable = [c for c in cards if action in c.actions]
        card = next((c for c in usable if c.surface == preferred), usable[0] if usable else None)
        if card is None:
            return
        who = await self.who(card, rng)
        if who is None:
            return
        self.tally.taps += 1
        self.tally.first_tap.setdefault(approval_id, now)
        self.tally.last_tap[approval_id] = now
        self.tally.tapped_on.setdefault(approval_id, f"{card.surface}:{card.chat}:{card.message_id}")
        await self.send_tap(card, who, action)

    async def rescue(self, card: Card, now: float) -> None:
        """A run that did not report back: the person checks whether it took effect (its entry in the
        ``executions`` stream, as one would look at the payments list) and chooses Run again or Mark as done."""
        ran = await self.ran(card.approval_id)
        record = await self.record_of(card.approval_id)
        if ran is None or record is None or record.get("state") != "effect_uncertain":
            return
        action = "run_again" if ran == 0 else "mark_done"
        who = await self.who(card, self.choice(card.approval_id))
        if who is None:
            return
        self.tally.rescues += 1
        self.tally.last_tap[f"rescue:{card.approval_id}"] = now
        await self.send_tap(card, who, action)

    async def send_tap(self, card: Card, who: TelegramUser | str, action: str) -> None:
        if isinstance(who, TelegramUser):
            self.later(self.telegram_tap(card, who, card.actions[action]))
        else:
            assert isinstance(card.raw, SlackMessage)
            request = self.fleet.slack.payloads.click(
                card.raw, card.actions[action], user=who, value=f"{action}:{card.approval_id}"
            )
            self.later(self.slack_send(request))

    async def touch(self, card: Card) -> None:
        """Someone taps a button on a stale copy (one its record does not know) of a settled request."""
        action = sorted(card.actions)[0]
        who = await self.who(card, self.choice(card.approval_id))
        if who is None:
            return
        self.tally.stale_copies_tapped += 1
        await self.send_tap(card, who, action)

    async def who(self, card: Card, rng: random.Random) -> TelegramUser | str | None:
        """Who taps this copy: a manager in an approvers' chat, else the requester (in their own chat)."""
        if card.chat in (str(TG_APPROVERS), SLACK_APPROVERS):
            return rng.choice(TG_MANAGERS) if card.surface == "telegram" else rng.choice(SLACK_MANAGERS)
        if card.surface == "telegram":
            return next((u for u in TG_WRITERS if str(u.id) == card.chat), None)
        record = await self.record_of(card.approval_id)
        principal = str(record["requester"]["principal"]) if record else None
        prefix = f"slack:{TEAM}:"
        return principal[len(prefix) :] if principal and principal.startswith(prefix) else None

    async def telegram_tap(self, card: Card, user: TelegramUser, data: str) -> None:
        update = await self.fleet.tg.tap(int(card.chat), int(card.message_id), user, data)
        if self.rng.random() < 0.25:
            await asyncio.sleep(0.2)
            self.tally.redeliveries += 1
            await self.fleet.tg.redeliver(update)


async def chaos(fleet: Fleet, rng: random.Random, tally: Tally, until: float) -> None:
    """Every 0.8-1.8 s: SIGKILL a worker (never the last one up of its platform) and restart it a moment
    later (7 in 10), or terminate every PostgreSQL backend the workers hold."""
    restarts: list[asyncio.Task[None]] = []

    async def restart(worker: Any, delay: float) -> None:
        await asyncio.sleep(delay)
        worker.start()
        tally.restarts += 1

    while time.monotonic() < until:
        await asyncio.sleep(rng.uniform(0.8, 1.8))
        if rng.random() < 0.7:
            platform = rng.choice(["telegram", "slack"])
            alive = [w for w in fleet.of(platform) if w.alive]
            if len(alive) < 2:
                continue
            victim = rng.choice(alive)
            victim.kill()
            tally.kills += 1
            restarts.append(asyncio.ensure_future(restart(victim, rng.uniform(0.2, 1.0))))
        else:
            rows = admin(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %s",
                (f"milpa-{fleet.schema}"[:63],),
            )
            tally.terminated_backends += int(rows[0][0])
    await asyncio.gather(*restarts)

"""A running ``TelegramBot`` (unmodified python-telegram-bot) against ``BotApiServer``, with the example tools."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from bots.tools import ExampleTools
from milpa_chat import ToolRegistry
from milpa_chat.bots import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.store import MemoryStore, Store
from milpa_chat.testing import BotApiServer, ManualClock, TelegramMessage, TelegramUpdate, TelegramUser

ALICE = TelegramUser(1001, "Alice", "alice")
BOB = TelegramUser(1002, "Bob", "bob")
MARIA = TelegramUser(2001, "Maria", "maria")
EVE = TelegramUser(9999, "Eve", "eve")
APPROVERS = -500
WAIT = 15.0  # seconds; generous for a loaded machine, the helpers return as soon as the bot has acted
IDENTITIES: dict[str, Any] = {
    "roles": {"writer": ["notes:read", "notes:write", "payments:send"], "manager": ["notes:read", "payments:approve"]},
    "users": {"telegram:1001": ["writer"], "telegram:1002": ["writer", "manager"], "telegram:2001": ["manager"]},
    "defaults": {"scopes": []},
    "approvers": {"telegram": [str(APPROVERS)]},
}
IDENTITIES_TOML = """
[roles]
writer = ["notes:read", "notes:write", "payments:send"]
manager = ["notes:read", "payments:approve"]
[users]
"telegram:1001" = ["writer"]
"telegram:2001" = ["manager"]
[approvers]
telegram = ["-500"]
"""


@dataclass
class Harness:
    server: BotApiServer
    bot: TelegramBot
    assistant: Assistant
    store: Store
    clock: ManualClock
    runs: list[str] = field(default_factory=list)

    async def say(self, user: TelegramUser, text: str, chat: int | None = None) -> TelegramMessage:
        """``user`` writes ``text``; returns the bot's first message in reply."""
        where = user.id if chat is None else chat
        update = await self.server.send_message(where, user, text)
        return await self.server.wait_for_message(where, since=update, timeout=WAIT)

    async def tap(self, message: TelegramMessage, word: str, user: TelegramUser) -> TelegramUpdate:
        """``user`` taps the button whose label contains ``word``; returns once the tap is answered."""
        update = await self.server.tap_button(message, label(message, word), user)
        await self.server.wait_until(lambda: self.server.callback_query(update).answered, WAIT, what="the tap's answer")
        return update

    def answer(self, update: TelegramUpdate) -> str:
        return self.server.callback_query(update).answer_text or ""

    async def tap_data(self, message: TelegramMessage, data: str, user: TelegramUser) -> str:
        """``user`` sends a tap with exactly ``data`` on ``message`` (as a stale or modified client can);
        returns the answer once it is there."""
        update = await self.server.tap(message.chat.id, message.message_id, user, data)
        query = self.server.callback_query(update)
        await self.server.wait_until(lambda: query.answered, WAIT, what="the tap's answer")
        return query.answer_text or ""

    def current(self, message: TelegramMessage) -> TelegramMessage:
        return self.server.message(message.chat.id, message.message_id)

    def assert_every_tap_answered_once(self) -> None:
        queries = self.server.callback_queries
        assert all(q.answered and q.answer_attempts == 1 for q in queries), [
            (q.data, q.answered, q.answer_attempts) for q in queries if not q.answered or q.answer_attempts != 1
        ]


def label(message: TelegramMessage, word: str) -> str:
    """The full label ("✅ Confirm") of the button whose label contains ``word``."""
    for text in message.button_labels:
        if word.lower() in text.lower():
            return text
    raise LookupError(f"no button with {word!r} on message {message.message_id}: {message.button_labels}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def make_assistant(store: Store, *, slow_seconds: float = 0.3) -> tuple[Assistant, list[str]]:
    registry = ToolRegistry(store=store)
    registry.scan(ExampleTools(store, slow_seconds=slow_seconds))
    runs: list[str] = []

    def ran(_event: str, payload: Mapping[str, Any]) -> None:
        if payload["event"].name != "resolve_verification":  # an approver's decision, not an example tool
            runs.append(payload["event"].name)

    registry.dispatcher.subscribe("tool.executed", ran)
    return Assistant(registry, Identities.from_dict(IDENTITIES), name="Test assistant"), runs


@asynccontextmanager
async def running_bot(
    *,
    store: Store | None = None,
    clock: ManualClock | None = None,
    webhook_secret: str | None = None,
    webhook: bool = False,
    sweep_interval: float | None = None,
    answer_within: float = 1.0,
) -> AsyncIterator[Harness]:
    """A started bot (polling, or webhook on a free port) with the approvers group registered."""
    clock = clock or ManualClock()
    store = store or MemoryStore(clock=clock)
    async with BotApiServer() as server:
        server.group(APPROVERS, "Approvers", members=[ALICE, MARIA, BOB])
        assistant, runs = make_assistant(store)
        bot = TelegramBot(
            assistant,
            server.token,
            server.base_url,
            webhook_secret=webhook_secret,
            sweep_interval=sweep_interval,
            answer_within=answer_within,
        )
        if webhook:
            port = free_port()
            await bot.start_webhook(f"http://127.0.0.1:{port}/hook", port=port, url_path="hook")
        else:
            await bot.start(poll_timeout=1)
        try:
            yield Harness(server, bot, assistant, store, clock, runs)
        finally:
            await bot.stop()
            await store.close()

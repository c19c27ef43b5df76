"""The page's live feed: what the adapters really sent, read back from the two local servers' records.

Nothing here renders a card. Every event is a record of :class:`~milpa_chat.testing.BotApiServer` (a message
with its current version: the HTML exactly as the bot sent it, its inline keyboard, its document; an answered
callback query; a chat action) or of :class:`~milpa_chat.testing.SlackApiServer` (a message with its blocks,
ephemeral or not, edited by ``chat.update`` or a ``response_url``), emitted when it first appears and again
each time it changes. The page draws those records the way each platform would.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from milpa_chat.testing import BotApiServer, SlackApiServer, SlackMessage, TelegramMessage

__all__ = ["Feed", "slack_event", "telegram_event"]

POLL_SECONDS = 0.05


def telegram_event(message: TelegramMessage) -> dict[str, Any]:
    """A Telegram message as the server holds it now."""
    current = message.current
    html = current.source if current.parse_mode and current.parse_mode.upper() == "HTML" else None
    document = None
    if message.document is not None:
        doc = message.document
        document = {"file_id": doc.file_id, "file_name": doc.file_name, "mime_type": doc.mime_type,
                    "size": len(doc.content)}  # fmt: skip
    return {
        "type": "tg.message", "chat": message.chat.id, "id": message.message_id,
        "from": {"id": message.sender.id, "name": message.sender.first_name, "bot": message.sender.is_bot},
        "text": current.text, "html": html, "buttons": message.buttons, "document": document,
        "version": len(message.versions), "deleted": message.deleted, "date": message.date,
    }  # fmt: skip


def slack_event(message: SlackMessage) -> dict[str, Any]:
    """A Slack message (ephemeral or not) as the server holds it now."""
    return {
        "type": "slack.message", "channel": message.channel, "ts": message.ts, "user": message.user,
        "bot": message.bot_id is not None, "text": message.text, "blocks": message.blocks,
        "thread_ts": message.thread_ts, "ephemeral_to": message.ephemeral_to, "version": len(message.history) + 1,
        "deleted": message.deleted, "via": message.via,
    }  # fmt: skip


class Feed:
    """Events in order (``events[n]["seq"] == n``); :meth:`poll` appends what changed since the last poll."""

    def __init__(self, telegram: BotApiServer, slack: SlackApiServer) -> None:
        self.telegram = telegram
        self.slack = slack
        self.events: list[dict[str, Any]] = []
        self._tg_seen: dict[tuple[int, int], tuple[int, bool]] = {}
        self._slack_seen: dict[tuple[str, str, str | None], tuple[int, bool]] = {}
        self._answered: set[str] = set()
        self._actions = 0
        self._marks: tuple[int, int, int] = (-1, -1, -1)
        self._noted = False
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None

    # -- reading the servers ----------------------------------------------------------------------
    def poll(self) -> int:
        """Append an event for every record that is new or changed; returns how many were appended."""
        marks = (len(self.telegram.calls), len(self.telegram.feed.history), len(self.slack.calls()))
        if marks == self._marks:
            return 0
        self._marks = marks
        before = len(self.events)
        self._poll_telegram()
        self._poll_slack()
        return len(self.events) - before

    def _poll_telegram(self) -> None:
        state = self.telegram.state
        for key, message in list(state.messages.items()):
            signature = (len(message.versions), message.deleted)
            if self._tg_seen.get(key) != signature:
                self._tg_seen[key] = signature
                self._add(telegram_event(message))
        for query in list(state.callback_queries.values()):
            if query.answered and query.id not in self._answered:
                self._answered.add(query.id)
                self._add({"type": "tg.answer", "query": query.id, "chat": query.chat_id, "id": query.message_id,
                           "user": query.user.id, "text": query.answer_text, "alert": query.show_alert})
        actions = state.chat_actions
        for action in actions[self._actions:]:
            self._add({"type": "tg.action", "chat": action.chat_id, "action": action.action})
        self._actions = len(actions)

    def _poll_slack(self) -> None:
        workspace = self.slack.workspace
        with workspace.lock:
            messages = [m for channel in workspace.messages.values() for m in channel] + list(workspace.ephemeral)
        for message in messages:
            key = (message.channel, message.ts, message.ephemeral_to)
            signature = (len(message.history), message.deleted)
            if self._slack_seen.get(key) != signature:
                self._slack_seen[key] = signature
                self._add(slack_event(message))

    def note(self, event: dict[str, Any]) -> None:
        """Add an event that is no platform record (what a person typed as a slash command, the tour's steps)."""
        self._add(event)
        self._noted = True

    def _add(self, event: dict[str, Any]) -> None:
        self.events.append({"seq": len(self.events), **event})

    # -- serving ------------------------------------------------------------------------------------
    def since(self, seq: int) -> list[dict[str, Any]]:
        return self.events[max(seq, 0):]

    async def wait(self, seq: int, timeout: float) -> None:  # noqa: ASYNC109 - a bounded long poll
        """Return once there are events from ``seq`` on, or after ``timeout`` seconds."""
        async with self._changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait_for(lambda: len(self.events) > seq), timeout)

    async def _run(self) -> None:
        while True:
            if self.poll() or self._noted:
                self._noted = False
                async with self._changed:
                    self._changed.notify_all()
            await asyncio.sleep(POLL_SECONDS)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="playground-feed")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def flush(self) -> None:
        """Read the servers now and wake the waiting streams (after an action of the page)."""
        if self.poll():
            await self._notify()

"""The page's live feed: what the adapters really sent, read back from the two local servers' records.

Nothing here renders a card. Every event is a record of :class:`~milpa_chat.testing.BotApiServer` (a message
with its current version: the HTML exactly as the bot sent it, its inline keyboard, its document; an answered
callback query; a chat action; a ``sendMessageDraft`` update of a private chat) or of
:class:`~milpa_chat.testing.SlackApiServer` (a message with its blocks,
ephemeral or not, edited by ``chat.update`` or a ``response_url``; a modal as ``views.open`` received it),
emitted when it first appears and again each time it changes. The page draws those records the way each
platform would.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from milpa_chat.playground.world import Modal, Modals
    from milpa_chat.testing import BotApiServer, SlackApiServer, SlackMessage, TelegramMessage
    from milpa_chat.testing.slack import AssistantThread, SlackView

__all__ = ["Feed", "slack_event", "telegram_event", "thread_event", "view_event"]

POLL_SECONDS = 0.05


def telegram_event(message: TelegramMessage, force_reply: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A Telegram message as the server holds it now; ``force_reply``: the ``ForceReply`` markup it was sent
    with (Telegram keeps no such markup in the message: the recipient's app opens a reply to it)."""
    current = message.current
    html = current.source if current.parse_mode and current.parse_mode.upper() == "HTML" else None
    document = None
    if message.document is not None:
        doc = message.document
        document = {"file_id": doc.file_id, "file_name": doc.file_name, "mime_type": doc.mime_type,
                    "size": len(doc.content)}  # fmt: skip
    force = bool(force_reply)
    markup = force_reply or {}
    return {
        "type": "tg.message", "chat": message.chat.id, "id": message.message_id,
        "from": {"id": message.sender.id, "name": message.sender.first_name, "bot": message.sender.is_bot},
        "text": current.text, "html": html, "buttons": message.buttons, "document": document,
        "version": len(message.versions), "deleted": message.deleted, "date": message.date,
        "force_reply": force, "placeholder": markup.get("input_field_placeholder") if force else None,
        "reply_to": message.reply_to_message_id,
    }  # fmt: skip


def slack_event(message: SlackMessage) -> dict[str, Any]:
    """A Slack message (ephemeral or not) as the server holds it now."""
    return {
        "type": "slack.message", "channel": message.channel, "ts": message.ts, "user": message.user,
        "bot": message.bot_id is not None, "text": message.text, "blocks": message.blocks,
        "thread_ts": message.thread_ts, "ephemeral_to": message.ephemeral_to, "version": len(message.history) + 1,
        "deleted": message.deleted, "via": message.via,
    }  # fmt: skip


def thread_event(thread: AssistantThread) -> dict[str, Any]:
    """A thread of Slack's assistant pane: whose it is, its title, the status shown now (with its loading
    messages) and the suggested prompts, as the app set them (``assistant.threads.*``)."""
    return {
        "type": "slack.thread", "channel": thread.channel_id, "thread_ts": thread.thread_ts, "user": thread.user_id,
        "title": thread.title, "status": thread.status, "loading": list(thread.loading_messages),
        "prompts": [dict(p) for p in thread.prompts], "prompts_title": thread.prompts_title,
    }  # fmt: skip


def view_event(view: SlackView, modal: Modal) -> dict[str, Any]:
    """A modal as the app opened it (``views.open``), whose it is, and whether it is still open."""
    return {
        "type": "slack.view",
        "id": view.id,
        "user": modal.user,
        "view": view.view,
        "closed": modal.closed,
        "errors": modal.errors or {},
    }


class Feed:
    """Events in order (``events[n]["seq"] == n``); :meth:`poll` appends what changed since the last poll."""

    def __init__(self, telegram: BotApiServer, slack: SlackApiServer, modals: Modals | None = None) -> None:
        self.telegram = telegram
        self.slack = slack
        self.modals = modals
        self._views_seen: dict[str, tuple[bool, str]] = {}
        self.events: list[dict[str, Any]] = []
        self._tg_seen: dict[tuple[int, int], tuple[int, bool, bool]] = {}
        self._tg_calls = 0
        self._force: dict[tuple[int, int], dict[str, Any]] = {}
        self._slack_seen: dict[tuple[str, str, str | None], tuple[int, bool, int, str | None]] = {}
        self._answered: set[str] = set()
        self._threads_seen: dict[tuple[str, str], str] = {}
        self._actions = 0
        self._drafts = 0
        self._marks: tuple[int, int, int, int] = (-1, -1, -1, -1)
        self._noted = False
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None

    # -- reading the servers ----------------------------------------------------------------------
    def poll(self) -> int:
        """Append an event for every record that is new or changed; returns how many were appended."""
        marks = (
            len(self.telegram.calls),
            len(self.telegram.feed.history),
            len(self.slack.calls()),
            self.modals.version if self.modals is not None else 0,
        )
        if marks == self._marks:
            return 0
        self._marks = marks
        before = len(self.events)
        self._poll_telegram()
        self._poll_slack()
        return len(self.events) - before

    def _poll_telegram(self) -> None:
        state = self.telegram.state
        calls = self.telegram.calls
        for call in calls[self._tg_calls :]:  # which messages went out with ForceReply
            if call.method.lower() == "sendmessage" and isinstance(call.result, Mapping):
                with contextlib.suppress(ValueError, TypeError, KeyError):
                    markup = json.loads(call.params.get("reply_markup") or "null")
                    if isinstance(markup, dict) and markup.get("force_reply"):
                        self._force[(int(call.result["chat"]["id"]), int(call.result["message_id"]))] = markup
        self._tg_calls = len(calls)
        drafts = state.drafts  # before the messages: the final message replaces the draft it ends
        for draft in drafts[self._drafts :]:
            self._add({"type": "tg.draft", "chat": draft.chat_id, "draft": draft.draft_id, "text": draft.text})
        self._drafts = len(drafts)
        for key, message in list(state.messages.items()):
            force = self._force.get(key)
            signature = (len(message.versions), message.deleted, force is not None)
            if self._tg_seen.get(key) != signature:
                self._tg_seen[key] = signature
                self._add(telegram_event(message, force))
        for query in list(state.callback_queries.values()):
            if query.answered and query.id not in self._answered:
                self._answered.add(query.id)
                self._add(
                    {
                        "type": "tg.answer",
                        "query": query.id,
                        "chat": query.chat_id,
                        "id": query.message_id,
                        "user": query.user.id,
                        "text": query.answer_text,
                        "alert": query.show_alert,
                    }
                )
        actions = state.chat_actions
        for action in actions[self._actions :]:
            self._add({"type": "tg.action", "chat": action.chat_id, "action": action.action})
        self._actions = len(actions)

    def _poll_slack(self) -> None:
        workspace = self.slack.workspace
        with workspace.lock:
            messages = [m for channel in workspace.messages.values() for m in channel] + list(workspace.ephemeral)
            threads = [thread_event(t) for t in self.slack.assistant_threads.threads.values() if t.user_id]
        for event in threads:  # before the thread's messages: the page knows the thread when they come
            where, shown = (event["channel"], event["thread_ts"]), json.dumps(event, sort_keys=True)
            if self._threads_seen.get(where) != shown:
                self._threads_seen[where] = shown
                self._add(event)
        for message in messages:
            key = (message.channel, message.ts, message.ephemeral_to)
            # a streamed message grows without new versions: its chunks and state are part of what changed
            signature = (len(message.history), message.deleted, len(message.chunks), message.stream_state)
            if self._slack_seen.get(key) != signature:
                self._slack_seen[key] = signature
                self._add(slack_event(message))
        if self.modals is None:
            return
        for view in self.slack.views():
            modal = self.modals.items.get(view.id)
            if modal is None:  # whose it is is known once the click that opened it was handled
                continue
            state = (modal.closed, repr(sorted((modal.errors or {}).items())))
            if self._views_seen.get(view.id) != state:
                self._views_seen[view.id] = state
                self._add(view_event(view, modal))

    def note(self, event: dict[str, Any]) -> None:
        """Add an event that is no platform record (what a person typed as a slash command, the tour's steps)."""
        self._add(event)
        self._noted = True

    def _add(self, event: dict[str, Any]) -> None:
        self.events.append({"seq": len(self.events), **event})

    # -- serving ------------------------------------------------------------------------------------
    def since(self, seq: int) -> list[dict[str, Any]]:
        return self.events[max(seq, 0) :]

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

    async def stream(self, seq: int, wait: float = 15.0) -> AsyncIterator[dict[str, Any]]:
        """Every event from ``seq`` on, then each new one as it comes, as server-sent events (``id``: its seq)."""
        while True:
            await self.wait(seq, wait)
            batch = self.since(seq)
            for event in batch:
                yield {"id": str(event["seq"]), "data": json.dumps(event, separators=(",", ":"))}
            if batch:
                seq = batch[-1]["seq"] + 1

    async def flush(self) -> None:
        """Read the servers now and wake the waiting streams (after an action of the page)."""
        if self.poll():
            await self._notify()

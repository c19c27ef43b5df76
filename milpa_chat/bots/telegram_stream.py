"""Streamed answers on Telegram.

* In a private chat: a draft (``sendMessageDraft``, Bot API 9.3, open to every bot since 9.5) updated as
  the answer grows, then the final message (``sendMessage``, through the transport's renderer, with the
  👍 / 👎 buttons when asked). Telegram documents no rate for drafts; the kit sends at most
  :data:`DRAFT_INTERVAL` seconds apart (a draft is a preview: the final message is what stays).
* In a group: drafts are for private chats only, so one message is sent and edited in place, at most one
  edit every :data:`GROUP_EDIT_INTERVAL` seconds: Telegram allows a bot about 20 messages a minute in
  one group, and every edit counts.

Steps of the agent's plan are lines above the text (⏳ waiting, 🔄 running, ✅ done, ❌ failed); the message
that stays keeps the steps still waiting or that failed. A run that stops to wait for a decision leaves no
message of its own in a private chat: the draft showed the waiting step, and the requester's card is there.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from dataclasses import replace
from typing import Any

from milpa_chat.chat import cards
from milpa_chat.chat.inbound import MessageRef
from milpa_chat.chat.streaming import EditedStream, Poster, Stream, feedback_buttons, plain_text
from milpa_chat.renderers.model import Actions, Message

__all__ = ["DRAFT_INTERVAL", "GROUP_EDIT_INTERVAL", "TelegramDraftStream", "open_telegram_stream"]

#: Seconds between two draft updates in a private chat.
DRAFT_INTERVAL = 0.4
#: Seconds between two edits of a streamed message in a group (20 messages a minute in one group).
GROUP_EDIT_INTERVAL = 3.0
#: Drafts are limited like messages: 4,096 characters.
MAX_DRAFT = 4096
_draft_ids = itertools.count(int.from_bytes(os.urandom(3), "big") + 1)


def open_telegram_stream(bot: Any, surface: Poster, chat_id: str) -> Stream:
    """A draft stream for a private chat (a positive chat id), an edited message in a group. ``bot``: a
    python-telegram-bot ``Bot``; ``surface`` sends the final message (the ``TelegramTransport``)."""
    if chat_id.isdigit():
        return TelegramDraftStream(bot, surface, chat_id)
    return EditedStream(surface, chat_id, interval=GROUP_EDIT_INTERVAL)


class TelegramDraftStream(Stream):
    """The answer as a draft in a private chat, then its final message (see the module's docstring)."""

    def __init__(self, bot: Any, surface: Poster, chat_id: str, *, interval: float = DRAFT_INTERVAL) -> None:
        super().__init__(interval=interval)
        self.bot = bot
        self.surface = surface
        self.chat_id = chat_id
        self.draft_id = next(_draft_ids)

    def _shown(self) -> str:
        shown = plain_text(self.steps, self.text)
        return shown if len(shown) <= MAX_DRAFT else shown[: MAX_DRAFT - 1] + "…"

    async def _push(self) -> None:
        self._take()
        await self.bot.send_message_draft(int(self.chat_id), self.draft_id, text=self._shown())

    async def _close(self, feedback: str | None) -> MessageRef | None:
        _, changed = self._take()
        if not self.text.strip():  # a run waiting for a decision: the draft shows the step, the card is here
            if changed:
                await asyncio.sleep(max(0.0, self._last + self.interval - time.monotonic()))
                await self.bot.send_message_draft(int(self.chat_id), self.draft_id, text=self._shown())
            return None
        return await self.surface.send(self.chat_id, self._final(feedback))

    def _final(self, feedback: str | None) -> Message:
        message = cards.text(plain_text(self.steps, self.text, final=True) or "…")
        if feedback is not None:
            message = replace(message, blocks=(*message.blocks, Actions.row(*feedback_buttons(feedback))))
        return message

"""Streamed answers on Slack: the chat streaming API, or an edited message where it is not available.

The answer is a reply in the thread of the message it answers: ``chat.startStream`` at the first update
(``task_display_mode="plan"``: the plan's steps shown together above the text), ``chat.appendStream``
with the new text as a ``markdown_text`` chunk and each changed step as a ``task_update`` chunk (id,
title, status: pending → in_progress → complete / error), at most one call every
:data:`STREAM_INTERVAL` seconds, and ``chat.stopStream`` at the end, with the feedback buttons (a
``context_actions`` block holding a ``feedback_buttons`` element) when asked.

Where the workspace refuses streaming (an older workspace or plan: ``unknown_method``,
``not_allowed_token_type``, ``feature_not_enabled`` …), the same answer is a thread reply posted once
and updated with ``chat.update`` at most every :data:`EDIT_INTERVAL` seconds (``chat.update`` is a
Tier 3 method: about 50 calls a minute).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from milpa_chat.chat import cards
from milpa_chat.chat.inbound import MessageRef
from milpa_chat.chat.streaming import PlanStep, Stream, feedback_buttons, plain_text
from milpa_chat.renderers.model import Actions

if TYPE_CHECKING:
    from slack_sdk.web.async_client import AsyncWebClient

    from milpa_chat.renderers.slack import SlackRenderer

__all__ = ["EDIT_INTERVAL", "NO_STREAMING", "STREAM_INTERVAL", "SlackStream", "feedback_block"]

log = logging.getLogger("milpa_chat.bots.slack")

#: Seconds between two streaming calls of one answer.
STREAM_INTERVAL = 0.5
#: Seconds between two ``chat.update`` calls of the fallback.
EDIT_INTERVAL = 1.2
#: Errors meaning "this workspace or token cannot stream": the answer falls back to an edited message.
NO_STREAMING: Final = frozenset(
    {"unknown_method", "not_allowed_token_type", "feature_not_enabled", "method_not_supported_for_channel_type"}
)


def feedback_block(answer_id: str) -> dict[str, Any]:
    """Slack's feedback element for an answer: 👍 / 👎 in a ``context_actions`` block."""
    up, down = feedback_buttons(answer_id)
    return {
        "type": "context_actions",
        "elements": [
            {
                "type": "feedback_buttons",
                "action_id": "milpa:feedback:0",
                "positive_button": {
                    "text": {"type": "plain_text", "text": up.label},
                    "value": up.callback_data,
                    "accessibility_label": "This answer helped",
                },
                "negative_button": {
                    "text": {"type": "plain_text", "text": down.label},
                    "value": down.callback_data,
                    "accessibility_label": "This answer did not help",
                },
            }
        ],
    }


def _task(step: PlanStep) -> dict[str, Any]:
    chunk: dict[str, Any] = {"type": "task_update", "id": step.id, "title": step.title, "status": step.status}
    if step.details:
        chunk["details"] = step.details
    return chunk


class SlackStream(Stream):
    """One answer streamed into ``thread_ts`` of ``channel`` for ``user`` of ``team`` (see the module)."""

    def __init__(
        self,
        client: AsyncWebClient,
        renderer: SlackRenderer,
        channel: str,
        thread_ts: str,
        *,
        user: str | None,
        team: str | None,
        interval: float = STREAM_INTERVAL,
    ) -> None:
        super().__init__(interval=interval)
        self.client = client
        self.renderer = renderer
        self.channel = channel
        self.thread_ts = thread_ts
        self.user = user
        self.team = team
        self.ts: str | None = None
        #: True once the workspace refused streaming: the answer is an edited thread reply instead.
        self.edited = False
        self._acked = 0  # how much of the text Slack accepted
        self._unsent: dict[str, PlanStep] = {}  # steps changed and not yet accepted

    def _chunks(self) -> tuple[list[dict[str, Any]], int]:
        """What Slack has not accepted yet (kept until a call succeeds: a failed append loses nothing)."""
        _, changed = self._take()
        self._unsent.update((step.id, step) for step in changed)
        chunks: list[dict[str, Any]] = [_task(s) for s in self._unsent.values()]
        if len(self.text) > self._acked:
            chunks.append({"type": "markdown_text", "text": self.text[self._acked :]})
        return chunks, len(self.text)

    def _accepted(self, upto: int) -> None:
        self._acked, self._unsent = upto, {}

    async def _push(self) -> None:
        if self.edited:
            await self._edit()
            return
        chunks, upto = self._chunks()
        if not chunks:
            return
        if self.ts is None:
            await self._start(chunks)
        else:
            await self.client.chat_appendStream(channel=self.channel, ts=self.ts, chunks=chunks)
        self._accepted(upto)

    async def _start(self, chunks: list[dict[str, Any]]) -> None:
        from slack_sdk.errors import SlackApiError

        recipient: dict[str, Any] = {}
        if not self.channel.startswith("D"):  # Slack needs the person streamed to in a channel
            recipient = {"recipient_user_id": self.user, "recipient_team_id": self.team}
        try:
            resp = await self.client.chat_startStream(
                channel=self.channel, thread_ts=self.thread_ts, chunks=chunks, task_display_mode="plan", **recipient
            )
        except SlackApiError as exc:
            if exc.response.get("error") not in NO_STREAMING:
                raise
            log.info("Slack refused streaming (%s); the answer is an edited message", exc.response.get("error"))
            self.edited, self.interval = True, max(self.interval, EDIT_INTERVAL)
            await self._edit()
            return
        self.ts = str(resp["ts"])

    async def _edit(self, feedback: str | None = None, *, final: bool = False) -> None:
        self._take()
        message = cards.text(plain_text(self.steps, self.text, final=final) or "…")
        if feedback is not None:
            message = replace(message, blocks=(*message.blocks, Actions.row(*feedback_buttons(feedback))))
        payload = self.renderer.render_message(message).message
        if self.ts is None:
            resp = await self.client.chat_postMessage(channel=self.channel, thread_ts=self.thread_ts, **payload)
            self.ts = str(resp["ts"])
        else:
            await self.client.chat_update(channel=self.channel, ts=self.ts, **payload)

    async def _close(self, feedback: str | None) -> MessageRef | None:
        chunks: list[dict[str, Any]] = []
        if not self.edited:
            chunks, upto = self._chunks()
            if self.ts is None:
                await self._start(chunks or [{"type": "markdown_text", "text": self.text or "…"}])
                self._accepted(upto)
                chunks = []
        if self.edited:
            await self._edit(feedback, final=True)
        else:
            assert self.ts is not None
            blocks = [feedback_block(feedback)] if feedback is not None else None
            await self.client.chat_stopStream(channel=self.channel, ts=self.ts, chunks=chunks or None, blocks=blocks)
        self.updates += 1
        return MessageRef("slack", self.channel, self.ts or "")

"""Waiting helpers of :class:`~milpa_chat.testing.BotApiServer`: block a test until the bot has acted.

Every helper re-checks after each API call and webhook delivery, so tests never sleep.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from milpa_chat.testing.telegram_models import ApiCall, ChatMessage, UpdateRecord
from milpa_chat.testing.telegram_updates import UpdateFeed

__all__ = ["WaitingMixin"]


class WaitingMixin:
    """``mark``, ``wait_for``, ``wait_until`` and ``wait_for_message``."""

    calls: list[ApiCall]
    _activity: asyncio.Event

    if TYPE_CHECKING:  # provided by BotApiServer

        @property
        def feed(self) -> UpdateFeed: ...

        def message(self, chat_id: int, message_id: int) -> ChatMessage: ...

    def _touch(self) -> None:
        """Wake the waiting helpers (after every call, answer and delivery)."""
        self._activity.set()
        self._activity = asyncio.Event()

    def mark(self) -> int:
        """A cursor into :attr:`calls` for ``wait_for(..., since=server.mark())``."""
        return len(self.calls)

    async def wait_for(
        self,
        predicate: Callable[[ApiCall], bool],
        timeout: float = 5.0,  # noqa: ASYNC109 - the waiting helpers' documented signature
        *,
        since: int | UpdateRecord | None = None,
    ) -> ApiCall:
        """The first call (after ``since``: a :meth:`mark` or an update) matching ``predicate``
        that has been answered; waits up to ``timeout`` seconds, then ``TimeoutError``."""
        start = since.call_index if isinstance(since, UpdateRecord) else since or 0
        found: list[ApiCall] = []

        def check() -> bool:
            found[:] = [c for c in self.calls[start:] if c.status and predicate(c)][:1]
            return bool(found)

        await self.wait_until(check, timeout, what="an API call matching the predicate")
        return found[0]

    async def wait_until(
        self,
        condition: Callable[[], object],
        timeout: float = 5.0,  # noqa: ASYNC109
        *,
        what: str = "",
    ) -> None:
        """Wait until ``condition()`` is true, re-checking after every API call and delivery."""
        deadline = time.monotonic() + timeout
        while not condition():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"timed out after {timeout} s waiting for {what or 'the condition'}")
            activity = self._activity
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(activity.wait(), remaining)

    async def wait_for_message(
        self,
        chat_id: int,
        *,
        since: int | UpdateRecord | None = None,
        timeout: float = 5.0,  # noqa: ASYNC109
    ) -> ChatMessage:
        """The first message the bot sends to ``chat_id`` after ``since`` (by default: after the
        latest update the server created, i.e. the bot's answer to what a user just did)."""
        if since is None and self.feed.history:
            since = self.feed.history[-1]

        def sent_there(call: ApiCall) -> bool:
            sent = call.method.lower() in ("sendmessage", "senddocument") and call.ok
            return sent and call.result["chat"]["id"] == chat_id

        call = await self.wait_for(sent_there, timeout, since=since)
        return self.message(chat_id, call.result["message_id"])

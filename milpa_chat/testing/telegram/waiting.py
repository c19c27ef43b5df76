"""Waiting helpers of :class:`~milpa_chat.testing.BotApiServer`: block a test until the bot has acted.

Every helper re-checks after each API call the server records (the contract of
:mod:`milpa_chat.testing.waiting`), so tests never sleep and never poll.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from milpa_chat.testing.telegram.models import TelegramApiCall, TelegramMessage, TelegramUpdate
from milpa_chat.testing.telegram.updates import UpdateFeed
from milpa_chat.testing.waiting import Activity

T = TypeVar("T")

__all__ = ["WaitingMixin"]


class WaitingMixin:
    """``mark``, ``wait_for``, ``wait_until`` and ``wait_for_message``."""

    calls: list[TelegramApiCall]
    activity: Activity

    if TYPE_CHECKING:  # provided by BotApiServer

        @property
        def feed(self) -> UpdateFeed: ...

        def message(self, chat_id: int, message_id: int) -> TelegramMessage: ...

    def _touch(self) -> None:
        """Wake the waiting helpers (after every call and answer)."""
        self.activity.notify()

    def mark(self) -> int:
        """A cursor into :attr:`calls` for ``wait_for(..., since=server.mark())``."""
        return len(self.calls)

    async def wait_for(
        self,
        predicate: Callable[[TelegramApiCall], bool],
        timeout: float = 5.0,  # noqa: ASYNC109 - the waiting helpers' documented signature
        *,
        since: int | TelegramUpdate | None = None,
    ) -> TelegramApiCall:
        """The first call (after ``since``: a :meth:`mark` or an update) matching ``predicate``
        that has been answered; waits up to ``timeout`` seconds, then ``TimeoutError``."""
        start = since.call_index if isinstance(since, TelegramUpdate) else since or 0
        found: list[TelegramApiCall] = []

        def check() -> bool:
            found[:] = [c for c in self.calls[start:] if c.status and predicate(c)][:1]
            return bool(found)

        await self.wait_until(check, timeout, what="an API call matching the predicate")
        return found[0]

    async def wait_for_call(self, method: str, *, count: int = 1, timeout: float = 5.0) -> TelegramApiCall:  # noqa: ASYNC109
        """The ``count``-th answered call of ``method`` (case-insensitive), waiting up to ``timeout`` seconds."""
        wanted = method.lower()

        def nth() -> TelegramApiCall | None:
            answered = [c for c in self.calls if c.status and c.method.lower() == wanted]
            return answered[count - 1] if len(answered) >= count else None

        found = await self.wait_until(nth, timeout, what=f"call {count} of {method}")
        assert found is not None
        return found

    async def wait_until(
        self,
        condition: Callable[[], T | None],
        timeout: float = 5.0,  # noqa: ASYNC109
        *,
        what: str = "",
    ) -> T:
        """Wait until ``condition()`` is true, re-checking after every API call; returns its (truthy) result."""
        found = await self.activity.wait_until(condition, timeout, what=what, describe=self._recent_calls)
        assert found is not None
        return found

    def _recent_calls(self) -> str:
        recent = ", ".join(f"{c.method} ({c.status or 'pending'})" for c in self.calls[-8:])
        return f"last calls: {recent or '(none)'}"

    async def wait_for_message(
        self,
        chat_id: int,
        *,
        since: int | TelegramUpdate | None = None,
        timeout: float = 5.0,  # noqa: ASYNC109
    ) -> TelegramMessage:
        """The first message the bot sends to ``chat_id`` after ``since`` (by default: after the
        latest update the server created, i.e. the bot's answer to what a user just did)."""
        if since is None and self.feed.history:
            since = self.feed.history[-1]

        def sent_there(call: TelegramApiCall) -> bool:
            sent = call.method.lower() in ("sendmessage", "senddocument") and call.ok
            return sent and call.result["chat"]["id"] == chat_id

        call = await self.wait_for(sent_there, timeout, since=since)
        return self.message(chat_id, call.result["message_id"])

"""The chat's "typing…" while work runs: shown once the work has run ``after`` seconds, refreshed every 4 s,
never for work that ends sooner (its result replaces the indicator at once anyway)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from typing import TypeVar

from milpa_chat.chat.surface import Transport

__all__ = ["typing_while"]

log = logging.getLogger("milpa_chat.chat")
T = TypeVar("T")

#: Indicators being shown (a reference to each task until it ends: it may outlive its work by one request).
_SHOWING: set[asyncio.Task[None]] = set()


async def typing_while(transport: Transport | None, chat_id: str, work: Awaitable[T], *, after: float) -> T:
    """Await ``work``; once it has run ``after`` seconds (0: at once), ``chat_id`` shows "typing…" until it ends."""
    if transport is None:
        return await work
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def show() -> None:
        task = loop.create_task(_keep_typing(transport, chat_id, stop))
        _SHOWING.add(task)
        task.add_done_callback(_SHOWING.discard)

    timer = loop.call_later(after, show) if after > 0 else None
    if timer is None:
        show()
    try:
        return await work
    finally:
        if timer is not None:
            timer.cancel()
        stop.set()  # a typing call in flight completes (cancelling it would drop a pooled connection)


async def _keep_typing(transport: Transport, chat_id: str, stop: asyncio.Event) -> None:
    """Typing once, then every 4 s until ``stop`` (once: the work may end before this task first runs)."""
    while True:
        try:
            await transport.typing(chat_id)
        except Exception:  # typing is cosmetic
            log.debug("typing indicator failed", exc_info=True)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 4.0)
            return

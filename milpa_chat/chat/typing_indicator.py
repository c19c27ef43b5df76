"""The chat's "typing…" while work runs: shown once the work has run ``after`` seconds, refreshed every 4 s,
never for work that ends sooner (its result replaces the indicator at once anyway)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import TypeVar

from milpa_chat.chat.surface import Transport
from milpa_chat.runtime._alarms import alarms

__all__ = ["typing_while"]

log = logging.getLogger("milpa_chat.chat")
T = TypeVar("T")

#: Indicators being shown (a reference to each task until it ends: it may outlive its work by one request).
_SHOWING: set[asyncio.Task[None]] = set()


async def typing_while(transport: Transport | None, chat_id: str, work: Awaitable[T], *, after: float) -> T:
    """Await ``work``; once it has run ``after`` seconds (0: at once), ``chat_id`` shows "typing…" until it ends."""
    if transport is None:
        return await work
    stop: list[asyncio.Future[None]] = []  # set once shown: work that ends sooner costs no task and no event

    def show() -> None:
        loop = asyncio.get_running_loop()
        stop.append(loop.create_future())
        task = loop.create_task(_keep_typing(transport, chat_id, stop[0]))
        _SHOWING.add(task)
        task.add_done_callback(_SHOWING.discard)

    clock = alarms() if after > 0 else None
    if clock is not None:
        alarm = clock.set(after, show)  # one timer of the loop serves every alarm (see _alarms)
    else:
        show()
    try:
        return await work
    finally:
        if clock is not None:
            clock.clear(alarm)
        if stop and not stop[0].done():
            stop[0].set_result(None)  # a typing call in flight completes (cancelling it would drop a pooled connection)


async def _keep_typing(transport: Transport, chat_id: str, stop: asyncio.Future[None]) -> None:
    """Typing once, then every 4 s until ``stop`` (once: the work may end before this task first runs)."""
    while True:
        try:
            await transport.typing(chat_id)
        except Exception:  # typing is cosmetic
            log.debug("typing indicator failed", exc_info=True)
        if stop.done():
            return
        await asyncio.wait({stop}, timeout=4.0)  # (waiting never cancels ``stop``)
        if stop.done():
            return

"""Work started by a click runs on the notebook's event loop; nothing here blocks the kernel.

Jupyter delivers a click to the kernel only while no cell blocks it, so every wait in this
package is asynchronous: a click schedules a task and returns at once. ``await widget.idle()``
waits for those tasks (tests and notebook cells use it); without a running loop (a plain Python
script) the work runs to completion inside the click.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import ipywidgets as widgets

from milpa_chat.runtime.sync import run_sync

__all__ = ["Background", "SafeButton"]

log = logging.getLogger("milpa_chat.jupyter")


class SafeButton(widgets.Button):  # type: ignore[misc]
    """A button that refuses to be clicked while disabled.

    Only the browser enforces ``disabled``: ``click()`` from code and a click message from a stale
    front end still reach the kernel. Both arrive through :meth:`click`, which does nothing here
    while the button is disabled.
    """

    def click(self) -> None:
        if self.disabled:
            log.debug("ignored a click on the disabled button %r", self.description)
            return
        super().click()


class Background:
    """Runs coroutines started by clicks; reports their failures through ``on_error``."""

    def __init__(self, on_error: Callable[[BaseException], None]) -> None:
        self._tasks: set[asyncio.Task[None]] = set()
        self._on_error = on_error

    def spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
        """Schedule ``coro`` on the running loop (a notebook), or run it now when there is none."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            run_sync(self._guard(coro))
            return None
        task = loop.create_task(self._guard(coro))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    @property
    def busy(self) -> bool:
        return any(not t.done() for t in self._tasks)

    async def idle(self) -> None:
        """Wait until every task started so far, and any they started, has finished."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def cancel(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    async def _guard(self, coro: Coroutine[Any, Any, None]) -> None:
        try:
            await coro
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("a notebook widget action failed")
            self._on_error(exc)

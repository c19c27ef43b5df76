"""Callbacks due after a delay, sharing one timer of the event loop.

A tap sets a few alarms ("typing…" after 0.2 s, "Running" after 0.5 s, the answer's grace) and, nearly always,
clears them a millisecond later: its work is done. A timer handle of the loop for each is created, pushed on
the loop's heap, cancelled and swept again, tap after tap. Here one timer serves every alarm of a loop: setting
an alarm is a dict entry (and a timer only when it is due before the one already set), clearing it removes the
entry; when the timer fires it runs what is due and sets itself for the next alarm, if any. An alarm runs when a
timer of its own would have (at its time, within the loop's clock resolution), in the order of its time.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
import weakref
from collections.abc import Callable
from typing import Any, Final

__all__ = ["Alarms", "alarms"]

#: What ``asyncio`` allows a timer to run early by (it runs what is due within the clock's resolution).
_RESOLUTION: Final = time.get_clock_info("monotonic").resolution


class Alarms:
    """The alarms of one event loop (:func:`alarms` gives the running loop's). It refers to its loop weakly and
    never to a timer handle, so it keeps no loop alive (the loop's timers refer to it, not the reverse)."""

    __slots__ = ("__weakref__", "_armed", "_due", "_ids", "_next", "_ref")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._ref = weakref.ref(loop)
        self._due: dict[int, tuple[float, Callable[[], Any]]] = {}
        self._ids = itertools.count()
        self._armed: list[float] = []  # when the loop's timers for these alarms fire
        self._next = math.inf  # the first of them

    def set(self, delay: float, callback: Callable[[], Any]) -> int:
        """Call ``callback()`` in ``delay`` seconds, unless :meth:`clear` is called first; returns its key."""
        loop = self._loop()
        at = loop.time() + delay
        key = next(self._ids)
        self._due[key] = (at, callback)
        if at < self._next:
            self._arm(loop, at)
        return key

    def clear(self, key: int) -> None:
        """The alarm ``key`` does not go off (nothing happens when it went off already). Its timer is left to
        fire (finding nothing, or a later alarm to wait for): the next alarms set reuse it."""
        self._due.pop(key, None)

    def __len__(self) -> int:
        return len(self._due)

    def _loop(self) -> asyncio.AbstractEventLoop:
        loop = self._ref()
        assert loop is not None  # (only the running loop's alarms are used)
        return loop

    def _arm(self, loop: asyncio.AbstractEventLoop, at: float) -> None:
        loop.call_at(at, self._fire, at)
        self._armed.append(at)
        self._next = min(self._next, at)

    def _fire(self, armed: float) -> None:
        self._armed.remove(armed)
        self._next = min(self._armed, default=math.inf)
        loop = self._loop()
        end = loop.time() + _RESOLUTION
        due = sorted((at, key) for key, (at, _) in self._due.items() if at <= end)
        for _, key in due:
            entry = self._due.pop(key, None)  # (an earlier callback may have cleared it)
            if entry is None:
                continue
            try:
                entry[1]()
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:  # as the loop treats a failing timer callback: reported, never raised
                loop.call_exception_handler(
                    {"message": "Exception in an alarm callback", "exception": exc, "callback": entry[1]}
                )
        if self._due:
            first = min(at for at, _ in self._due.values())
            if first < self._next:
                self._arm(loop, first)


_LOOPS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Alarms] = weakref.WeakKeyDictionary()
_last: Alarms | None = None


def alarms() -> Alarms:
    """The running loop's alarms."""
    global _last
    loop = asyncio.get_running_loop()
    last = _last
    if last is not None and last._ref() is loop:
        return last
    found = _LOOPS.get(loop)
    if found is None:
        found = _LOOPS[loop] = Alarms(loop)
    _last = found
    return found

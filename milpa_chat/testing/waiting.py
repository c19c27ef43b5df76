"""One way to wait in tests: wake on what happened, never on a timer.

* :class:`Activity` is what every local server of :mod:`milpa_chat.testing` notifies on each call it
  records; ``await server.wait_until(condition, timeout=...)`` re-checks ``condition`` after each
  notification (from any thread or event loop) and returns its first truthy result.
* :func:`eventually` is the same wait for user code: re-check an assertion or a predicate until it
  holds, waking on servers' activity when given ``on=`` and polling gently otherwise.
* :class:`ManualClock` is a clock the test moves by hand (``clock.advance(60)``), for the store's
  ``clock=`` and anything else that takes a callable returning the time.
"""

from __future__ import annotations

import asyncio
import contextlib
import dis
import inspect
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar

__all__ = ["Activity", "HasActivity", "ManualClock", "eventually"]

T = TypeVar("T")

_POLL_FIRST, _POLL_MAX = 0.005, 0.1  # eventually()'s poll without activity: 5 ms, doubling to 100 ms


class Activity:
    """A notification that something happened, safe across threads and event loops.

    ``notify()`` wakes every waiter; :meth:`wait_until` and :meth:`wait_until_sync` re-check their
    condition after each notification, so a test waits exactly as long as the code under test needs.
    """

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._count = 0
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

    @property
    def count(self) -> int:
        """How many notifications so far."""
        return self._count

    def notify(self) -> None:
        """Wake every waiter (call after each recorded call, answer or delivery)."""
        with self._condition:
            self._count += 1
            self._condition.notify_all()
            waiters = list(self._waiters)
        try:
            current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        for loop, event in waiters:
            if loop is current:
                event.set()
            else:
                with contextlib.suppress(RuntimeError):  # that loop is closed: its waiter is gone
                    loop.call_soon_threadsafe(event.set)

    async def wait_until(
        self,
        condition: Callable[[], T],
        timeout: float = 5.0,  # noqa: ASYNC109 - the documented signature; the error names what was awaited
        *,
        what: str = "",
        describe: Callable[[], str] | None = None,
    ) -> T:
        """``condition()``'s first truthy result, re-checked after every notification; ``TimeoutError``
        after ``timeout`` seconds, naming ``what`` was awaited (and ``describe()``, when given)."""
        loop = asyncio.get_running_loop()
        event = asyncio.Event()
        entry = (loop, event)
        deadline = loop.time() + timeout
        self._add_waiter(entry)
        try:
            while True:
                event.clear()
                value = condition()
                if value:
                    return value
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise TimeoutError(_timeout_text(timeout, what, describe))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), remaining)
        finally:
            self._remove_waiter(entry)

    def _add_waiter(self, entry: tuple[asyncio.AbstractEventLoop, asyncio.Event]) -> None:
        with self._condition:
            self._waiters.add(entry)

    def _remove_waiter(self, entry: tuple[asyncio.AbstractEventLoop, asyncio.Event]) -> None:
        with self._condition:
            self._waiters.discard(entry)

    def wait_until_sync(
        self,
        condition: Callable[[], T],
        timeout: float = 5.0,
        *,
        what: str = "",
        describe: Callable[[], str] | None = None,
    ) -> T:
        """:meth:`wait_until` for sync code (the notifier must run in another thread)."""
        deadline = time.monotonic() + timeout
        while True:
            seen = self._count
            value = condition()  # not under the lock: the condition may take the server's own locks
            if value:
                return value
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(_timeout_text(timeout, what, describe))
            with self._condition:
                if self._count == seen:  # nothing happened since the check: sleep until something does
                    self._condition.wait(remaining)


class HasActivity(Protocol):
    """Anything with an :class:`Activity`: every local server of :mod:`milpa_chat.testing`."""

    @property
    def activity(self) -> Activity: ...


def _timeout_text(timeout: float, what: str, describe: Callable[[], str] | None) -> str:
    text = f"timed out after {timeout} s waiting for {what or 'the condition'}"
    return f"{text}; {describe()}" if describe is not None else text


async def eventually(
    check: Callable[[], Any],
    timeout: float = 5.0,  # noqa: ASYNC109 - the documented signature; the error names the last failure
    *,
    on: HasActivity | Activity | Iterable[HasActivity | Activity] = (),
    what: str = "",
) -> Any:
    """Re-run ``check`` until it holds and return its result.

    ``check`` is a predicate (done when its result is truthy: ``None``, ``False``, ``0``, ``""`` or an
    empty collection mean "not yet") or an assertion function (one with an ``assert`` in its body:
    done when it returns without ``AssertionError``). It may be a coroutine function. With
    ``on=server`` (or several) it is re-checked after each call those servers record; otherwise every
    few milliseconds. After ``timeout`` seconds: ``TimeoutError`` with the last assertion's message.
    """
    sources = _activities(on)
    asserting = _asserts(check)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    pause = _POLL_FIRST
    event = asyncio.Event()
    entries = [(activity, (loop, event)) for activity in sources]
    for activity, entry in entries:
        activity._add_waiter(entry)
    try:
        while True:
            event.clear()
            done, value, failure = await _attempt(check, asserting)
            if done:
                return value
            remaining = deadline - loop.time()
            if remaining <= 0:
                reason = f": {failure}" if failure else ""
                raise TimeoutError(f"{what or 'the check'} did not hold within {timeout} s{reason}")
            wait = remaining if sources else min(pause, remaining)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), wait)
            pause = min(pause * 2, _POLL_MAX)
    finally:
        for activity, entry in entries:
            activity._remove_waiter(entry)


async def _attempt(check: Callable[[], Any], asserting: bool) -> tuple[bool, Any, str]:
    try:
        value = check()
        if inspect.isawaitable(value):
            value = await value
    except AssertionError as exc:
        return False, None, str(exc) or "AssertionError"
    if value or (asserting and value is None):
        return True, value, ""
    hint = " (an assertion function needs an assert of its own, or return True)" if value is None else ""
    return False, value, f"the last result was {value!r}{hint}"


def _asserts(check: Callable[[], Any]) -> bool:
    """Whether ``check``'s own code raises AssertionError (an ``assert``, rewritten by pytest or not)."""
    code = getattr(inspect.unwrap(check), "__code__", None)
    if code is None:
        return False
    return any(
        op.opname == "LOAD_ASSERTION_ERROR" or op.argval is AssertionError or op.argval == "AssertionError"
        for op in dis.get_instructions(code)
    )


def _activities(on: HasActivity | Activity | Iterable[HasActivity | Activity]) -> list[Activity]:
    items: Iterable[HasActivity | Activity] = [on] if isinstance(on, Activity) or hasattr(on, "activity") else on  # type: ignore[list-item]
    found: list[Activity] = []
    for item in items:
        activity = item if isinstance(item, Activity) else getattr(item, "activity", None)
        if not isinstance(activity, Activity):
            raise TypeError(f"eventually(on=...) takes servers of milpa_chat.testing or Activity objects, not {item!r}")
        found.append(activity)
    return found


class ManualClock:
    """A clock that only moves when the test says so: ``clock()`` is the time, ``clock.advance(60)``
    moves it (pass it as the store's ``clock=``). ``now`` may also be set directly."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = float(start)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        """Move the clock forward by ``seconds`` (not backwards: that is a mistake in a test) and
        return the new time."""
        if seconds < 0:
            raise ValueError(f"ManualClock.advance({seconds}): a clock moves forward; set clock.now to go back")
        self.now += seconds
        return self.now

    def __repr__(self) -> str:
        return f"ManualClock(now={self.now})"

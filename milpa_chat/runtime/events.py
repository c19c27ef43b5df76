"""Events around every call: ``tool.executing`` (interceptable), ``tool.executed``, ``tool.failed``,
and the verification events.

Listeners are called as ``listener(event_name, payload)``; ``payload["event"]`` holds the event
object and, for ``tool.executing``, ``payload["slot"]`` the :class:`InterceptionSlot`. Listeners may
be sync or async. ``tool.executing`` is dispatched only after every gate passed (the security
anchor: a cache listener can never answer a denied call).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.result import ToolResult

__all__ = [
    "EventDispatcher",
    "InterceptionSlot",
    "Listener",
    "ToolExecuted",
    "ToolExecuting",
    "ToolFailed",
]

log = logging.getLogger("milpa_chat.events")

Listener = Callable[[str, Mapping[str, Any]], Any]


@dataclass(frozen=True, slots=True)
class ToolExecuting:
    name: str
    ctx: ToolContext
    args: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolExecuted:
    name: str
    ctx: ToolContext
    args: dict[str, Any]
    result: ToolResult
    cache_served: bool = False


@dataclass(frozen=True, slots=True)
class ToolFailed:
    name: str
    ctx: ToolContext
    args: dict[str, Any]
    exception: BaseException
    took_ms: float


class InterceptionSlot:
    """Lets a ``tool.executing`` listener answer for the tool (``short_circuit``) or veto it (``stop``)."""

    __slots__ = ("_result", "_stopped")

    def __init__(self) -> None:
        self._result: Any = _UNSET
        self._stopped = False

    def stop(self) -> None:
        self._stopped = True

    def short_circuit(self, result: Any) -> None:
        self._result = result
        self._stopped = True

    @property
    def has_result(self) -> bool:
        return self._result is not _UNSET

    @property
    def result(self) -> Any:
        return None if self._result is _UNSET else self._result

    @property
    def stopped(self) -> bool:
        return self._stopped


_UNSET: Any = object()


class EventDispatcher:
    """Ordered listeners per event name."""

    def __init__(self) -> None:
        self._listeners: dict[str, list[Listener]] = {}

    def subscribe(self, event: str, listener: Listener) -> Callable[[], None]:
        """Add a listener; returns a function that removes it."""
        self._listeners.setdefault(event, []).append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners.get(event, []):
                self._listeners[event].remove(listener)

        return unsubscribe

    def on(self, event: str) -> Callable[[Listener], Listener]:
        """Decorator form of :meth:`subscribe`."""

        def deco(fn: Listener) -> Listener:
            self.subscribe(event, fn)
            return fn

        return deco

    def has_listeners(self, event: str) -> bool:
        return bool(self._listeners.get(event))

    async def dispatch(self, event: str, payload: Mapping[str, Any], *, raise_errors: bool = False) -> None:
        """Call every listener in order. A failing listener is logged (or re-raised when asked)."""
        for listener in list(self._listeners.get(event, ())):
            try:
                out = listener(event, payload)
                if inspect.isawaitable(out):
                    await out
            except Exception:
                if raise_errors:
                    raise
                log.exception("Listener %r for %r failed", listener, event)

"""What may stop a tool call before it runs: ``ToolCallGate``, and the table of options, ``OptionTable``.

A gate answers two questions. :meth:`ToolCallGate.refuse` runs before a call and returns the
reason it does not proceed (``None`` lets it through); :meth:`ToolCallGate.record` runs after the
call with the whole :class:`~milpa_chat.runtime.ToolResult`. A refusal is a string because whoever
receives it needs to know why.

The :class:`OptionTable` holds the options an authority has taken off the table. Its two
questions look alike and are not: :meth:`~OptionTable.removed` is the projection the model's
catalogue is derived from (every step), :meth:`~OptionTable.was_removed` is the fact that decides
whether a refusal is recoverable (the reason goes back to the model and the run continues) or a
pause (a person decides).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

from milpa_chat.runtime.result import ToolResult

__all__ = ["OptionTable", "Refusal", "Removal", "ToolCall", "ToolCallGate", "maybe_await"]

T = TypeVar("T")


async def maybe_await(value: T | Awaitable[T]) -> T:
    """``await`` what a gate returned when it is awaitable (gates may be sync or async)."""
    if inspect.isawaitable(value):
        return cast(T, await value)
    return value


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model asked for. ``problem`` is set when its arguments could not be read."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None

    @classmethod
    def from_message(cls, call: Mapping[str, Any]) -> ToolCall:
        """From an OpenAI-shaped ``tool_calls`` item (``{id, type, function: {name, arguments}}``)."""
        function = call.get("function") or {}
        name = str(function.get("name") or "")
        raw = function.get("arguments")
        arguments, problem = _decode_arguments(raw)
        return cls(str(call.get("id") or ""), name, arguments, problem)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments, "problem": self.problem}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        return cls(str(data["id"]), str(data["name"]), dict(data.get("arguments") or {}), data.get("problem"))


def _decode_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    if isinstance(raw, Mapping):
        return dict(raw), None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    try:
        decoded = json.loads(raw)
    except (TypeError, ValueError) as exc:
        return {}, f"the arguments are not valid JSON ({exc}); send them as one JSON object"
    if not isinstance(decoded, dict):
        return {}, f"the arguments must be one JSON object, got {type(decoded).__name__}"
    return decoded, None


class Refusal(str):
    """A refusal reason that also names its cause with a stable ``code``.

    It *is* the reason string, so any code that expects a ``str`` from :meth:`ToolCallGate.refuse`
    keeps working; code that wants to tell causes apart reads ``refusal.code``.
    """

    code: str

    def __new__(cls, reason: str, code: str = "refused") -> Refusal:
        made = super().__new__(cls, reason)
        made.code = code
        return made


@runtime_checkable
class ToolCallGate(Protocol):
    """Decides before a call whether it proceeds, and sees the outcome after it.

    Either method may be a plain function or a coroutine function. ``refuse`` returns the reason
    the call does not proceed, or ``None``. ``record`` is called with every result the pipeline
    produced for a call that was not refused (failures, confirmation requests and blocked results
    included), and again with the human's outcome when a paused call is resumed.
    """

    def refuse(self, call: ToolCall) -> str | Awaitable[str | None] | None: ...

    def record(self, call: ToolCall, result: ToolResult) -> Awaitable[None] | None: ...


@dataclass(frozen=True, slots=True)
class Removal:
    """Why an option left the table: a stable ``code`` and an optional human ``message``."""

    option: str
    code: str
    message: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"option": self.option, "code": self.code, "message": self.message}


class OptionTable:
    """The options taken off the table during a run. A removed option never comes back.

    Subclass it to keep the table elsewhere (a store, a session): :meth:`removed` must re-read the
    state on every call, because the catalogue the model sees is re-derived from it each step.
    """

    def __init__(self, removals: Iterable[Removal | Mapping[str, Any]] = ()) -> None:
        self._removals: dict[str, Removal] = {}
        for item in removals:
            r = (
                item
                if isinstance(item, Removal)
                else Removal(str(item["option"]), str(item["code"]), item.get("message"))
            )
            self.remove(r.option, r.code, r.message)

    def remove(self, option: str, code: str, message: str | None = None) -> None:
        """Take ``option`` off the table with a stable ``code`` (the first removal's reason is kept)."""
        option, code = option.strip(), code.strip()
        if option and code and option not in self._removals:
            self._removals[option] = Removal(option, code, message)

    def removed(self) -> list[str]:
        """The projection: names the model's catalogue leaves out, in the order they were removed."""
        return list(self._removals)

    def was_removed(self, option: str) -> bool:
        """The fact: did an authority declare ``option`` gone?"""
        return option in self._removals

    def reason(self, option: str) -> Removal | None:
        return self._removals.get(option)

    def to_list(self) -> list[dict[str, Any]]:
        """JSON-ready removals (kept in a paused run's state)."""
        return [r.to_dict() for r in self._removals.values()]

    def __repr__(self) -> str:
        return f"OptionTable(removed={self.removed()!r})"

"""``NamedCall`` (an operation and the arguments a grant fixes for it) and ``StandingCall`` (a call, as facts).

A grant names calls two ways, on purpose. What it *covers* is matched openly (:meth:`NamedCall.matches`):
the call carries each fixed argument with an identical value, and the rest is free. The run that
*measures* a condition or *watches* a falsifier is matched closed (:meth:`NamedCall.matches_exactly`):
besides the fixed arguments it may carry only the names listed in ``free`` — an open match there
would let a later run with one argument more (``lenient=True``) speak for the condition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from milpa_chat.command.canonical import Canonical
from milpa_chat.command.effects import EffectProfile
from milpa_chat.command.ids import OperationId
from milpa_chat.grants.errors import InvalidGrant
from milpa_chat.grants.rules import (
    check_argument_name,
    check_fixed_value,
    check_one_line,
    check_operation_name,
    check_text_type,
    same_value,
)

if TYPE_CHECKING:
    from milpa_chat.command.atom import Operation
    from milpa_chat.command.evidence import AuthorityPolicy, ContextFacts

__all__ = ["NamedCall", "Run", "StandingCall"]


class Run(Protocol):
    """Anything that says which operation ran with which arguments (a call, a receipt)."""

    @property
    def operation(self) -> str: ...

    @property
    def arguments(self) -> Mapping[str, Any]: ...


def _argument_map(where: str, value: object) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidGrant(where, f"takes a map of argument names to values, got {Canonical.shown(value)}")
    for key in value:
        if type(key) is not str:
            raise InvalidGrant(where, f"has an argument name that is not a text: {Canonical.shown(key)}")
    return dict(value)


@dataclass(frozen=True, slots=True)
class NamedCall:
    """An operation (by name, as text) with the arguments it fixes and, for a measuring run, the ``free`` names.

    ``NamedCall("release:publish", {"channel": "stable"})``. Names are never trimmed or repaired:
    ``" release:publish"`` is refused, and an ``OperationId`` (or anything but a ``str``) is a ``TypeError``.
    """

    operation: str
    arguments: Mapping[str, str | int | bool] = field(default_factory=dict)
    free: Sequence[str] = ()

    def __post_init__(self) -> None:
        check_operation_name("operation", self.operation)
        arguments = _argument_map("arguments", self.arguments)
        for name, value in arguments.items():
            check_argument_name(f"arguments.{Canonical.shown(name)}", name)
            check_fixed_value(f"arguments.{name}", value)
        object.__setattr__(self, "arguments", arguments)
        if isinstance(self.free, str) or not isinstance(self.free, Iterable):
            raise InvalidGrant("free", f"takes a list of argument names, got {Canonical.shown(self.free)}")
        free = tuple(self.free)
        for i, name in enumerate(free):
            check_argument_name(f"free[{i}]", name)
            if name in arguments:
                raise InvalidGrant(f"free[{i}]", f"{Canonical.shown(name)} is fixed already; a name is fixed or free")
            if name in free[:i]:
                raise InvalidGrant(f"free[{i}]", f"{Canonical.shown(name)} is listed twice; list it once")
        object.__setattr__(self, "free", free)

    def __eq__(self, other: object) -> bool:
        """Same spelling, same free names, and fixed values of the same type and value (``True`` is not ``1``)."""
        if not isinstance(other, NamedCall):
            return NotImplemented
        return (
            self.operation == other.operation
            and self.free == other.free
            and same_value(dict(self.arguments), dict(other.arguments))
        )

    def __hash__(self) -> int:
        return hash((self.operation, Canonical.json(dict(self.arguments)), self.free))

    @property
    def id(self) -> OperationId:
        """The operation's identity (``release:publish`` and ``Release_Publish`` are one)."""
        return OperationId(self.operation)

    def names_operation(self, operation: str) -> bool:
        """Whether ``operation`` (any spelling) is this entry's operation."""
        return self.id == OperationId(operation)

    def matches(self, call: Run) -> bool:
        """Open match: same operation, every fixed argument present with an identical value; the rest is free."""
        if not self.names_operation(call.operation):
            return False
        carried = call.arguments
        return all(name in carried and same_value(carried[name], value) for name, value in self.arguments.items())

    def matches_exactly(self, call: Run) -> bool:
        """Closed match: :meth:`matches`, and every other argument of the call is listed in ``free``."""
        if not self.matches(call):
            return False
        return all(name in self.arguments or name in self.free for name in call.arguments)

    def to_dict(self, *, with_free: bool = True) -> dict[str, Any]:
        """``{"operation", "arguments", "free"}`` (``free`` left out for a covering entry)."""
        spelled: dict[str, Any] = {"operation": self.operation, "arguments": dict(self.arguments)}
        if with_free:
            spelled["free"] = list(self.free)
        return spelled


@dataclass(frozen=True, slots=True)
class StandingCall:
    """The call a judge is asked about, as facts the host gathered.

    ``arguments`` are the call's arguments *as the operation reads them* (defaults filled in, texts
    trimmed or folded as it does, types as declared): the judge compares them byte for byte and
    never trims, folds or converts. ``content`` is what the operation says the call acts on
    (:meth:`Operation.content_of`), ``None`` when it cannot say; ``effect`` the ceiling this call
    carries; ``now`` the instant of judgment (the judge reads no clock).
    """

    operation: str
    arguments: Mapping[str, Any]
    seat: str
    _: KW_ONLY
    content: str | None
    effect: EffectProfile
    now: datetime

    def __post_init__(self) -> None:
        check_operation_name("operation", self.operation)
        object.__setattr__(self, "arguments", _argument_map("arguments", self.arguments))
        check_text_type("seat", self.seat)
        if self.content is not None:
            check_one_line("content", self.content)
        if not isinstance(self.effect, EffectProfile):
            raise TypeError(f"effect: takes the call's EffectProfile (Operation.ceiling_for_call), got {self.effect!r}")
        if not isinstance(self.now, datetime) or self.now.utcoffset() is None:
            raise TypeError(f"now: takes a timezone-aware datetime (e.g. datetime.now(UTC)), got {self.now!r}")

    @classmethod
    def of(
        cls,
        operation: Operation,
        arguments: Mapping[str, Any],
        seat: str,
        *,
        now: datetime,
        policy: AuthorityPolicy | None = None,
        facts: ContextFacts | None = None,
    ) -> StandingCall:
        """The facts of calling ``operation``: its content (``content_of``) and this call's effect ceiling."""
        return cls(
            operation.name,
            arguments,
            seat,
            content=operation.content_of(arguments),
            effect=operation.ceiling_for_call(arguments, policy, facts),
            now=now,
        )

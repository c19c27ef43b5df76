"""What the registry knows about one tool, and the contract of argument validators.

``@tool`` (``declare.py``) and ``ToolRegistry.register`` both produce a :class:`ToolDefinition`;
the pipeline (``registry.py``) only ever reads these.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from milpa_chat.errors import DeclarationError, InvalidOptionError, MilpaError

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext

__all__ = [
    "ArgumentError",
    "ArgumentsValidator",
    "InvalidArguments",
    "ToolDefinition",
    "ValidatedArgs",
    "VerifyPolicy",
]


@dataclass(frozen=True, slots=True)
class ArgumentError:
    """One failed check. ``path`` is dotted (``filters.tags.2``); empty for the whole object."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class InvalidArguments(MilpaError):
    """Raised by a validator; carries every failed check, not only the first.

    A control-flow signal inside the pipeline: ``ToolRegistry.call`` turns it into a
    ``VALIDATION_ERROR`` result, it never reaches the caller."""

    def __init__(self, errors: list[ArgumentError], text: str | None = None) -> None:
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors) if text is None else text)


@dataclass(frozen=True, slots=True)
class ValidatedArgs:
    """Arguments after validation and clamping.

    ``wire`` is the JSON form (what a confirm snapshot stores, what plans and audit show);
    ``call`` is what the handler receives (enum members, pydantic models, ...). For tools with
    only JSON-native parameters both may be the same dict.
    """

    wire: dict[str, Any]
    call: dict[str, Any]


class ArgumentsValidator(Protocol):
    """Compiled once per tool. Raises :class:`InvalidArguments` listing every error with its path."""

    def __call__(self, args: Mapping[str, Any], /) -> ValidatedArgs: ...


@dataclass(frozen=True, slots=True)
class VerifyPolicy:
    """A tool that needs someone else's approval before it runs (``@tool(verify=...)``).

    ``approver_scopes``: an approver needs one of these scopes. ``four_eyes``: the requester
    may not approve their own request. ``quorum``: how many distinct approvers must grant.
    ``expires_in``: seconds until an undecided request expires. ``remind_after``: seconds after the
    request at which the approvers are reminded while nobody has decided (a fresh copy of the card
    where they are). ``escalate_after``: seconds after which an undecided request also goes to the
    escalation approvers (a chat layer's configuration), and the requester is told. ``deliver``:
    where a chat layer shows the card: ``"channels"`` (the approver chats, the default), ``"direct"``
    (each approver's direct messages) or ``"both"``. Seeing a card never confers authority.
    ``risk``: ``"low"`` or ``"high"`` overrides the risk tier read from the tool's declared effect
    (high: approving needs a typed reason); ``None`` reads it from the effect.
    """

    approver_scopes: tuple[str, ...] = ()
    four_eyes: bool = True
    quorum: int = 1
    expires_in: float = 3600.0
    remind_after: tuple[float, ...] = ()
    escalate_after: float | None = None
    deliver: str = "channels"
    risk: str | None = None

    def __post_init__(self) -> None:
        scopes = self.approver_scopes
        if isinstance(scopes, str):
            scopes = (scopes,)
        if not isinstance(scopes, Iterable) or not all(isinstance(s, str) and s.strip() for s in scopes):
            raise DeclarationError(
                f"VerifyPolicy(approver_scopes=...) takes a list of scope names, got {self.approver_scopes!r}; "
                f"e.g. VerifyPolicy(approver_scopes=['payments:approve'])"
            )
        object.__setattr__(self, "approver_scopes", tuple(scopes))
        if not isinstance(self.four_eyes, bool):
            raise DeclarationError(f"VerifyPolicy(four_eyes=...) must be True or False, got {self.four_eyes!r}")
        if isinstance(self.quorum, bool) or not isinstance(self.quorum, int):
            raise DeclarationError(f"VerifyPolicy(quorum=...) must be a whole number such as 2, got {self.quorum!r}")
        if self.quorum < 1:
            raise InvalidOptionError(
                f"VerifyPolicy(quorum=...) must be at least 1 (the number of distinct approvers), got {self.quorum}"
            )
        expires = self.expires_in
        if isinstance(expires, bool) or not isinstance(expires, int | float):
            raise DeclarationError(f"VerifyPolicy(expires_in=...) must be a number of seconds, got {expires!r}")
        if not 0 < expires < math.inf:
            raise InvalidOptionError(
                f"VerifyPolicy(expires_in=...) must be positive, finite seconds, got {expires}; "
                f"e.g. expires_in=3600 for one hour"
            )
        self._check_times()
        if self.deliver not in ("channels", "direct", "both"):
            raise InvalidOptionError(
                f"VerifyPolicy(deliver=...) is 'channels', 'direct' or 'both', got {self.deliver!r}"
            )
        if self.risk not in (None, "low", "high"):
            raise InvalidOptionError(
                f"VerifyPolicy(risk=...) is 'low', 'high' or None (read from the tool's effect), got {self.risk!r}"
            )

    def _check_times(self) -> None:
        reminders = self.remind_after
        if isinstance(reminders, int | float) and not isinstance(reminders, bool):
            reminders = (reminders,)
        times = [*reminders] + ([] if self.escalate_after is None else [self.escalate_after])
        for t in times:
            if isinstance(t, bool) or not isinstance(t, int | float):
                raise DeclarationError(f"VerifyPolicy(remind_after=..., escalate_after=...) take seconds, got {t!r}")
            if not 0 < t < self.expires_in:
                raise InvalidOptionError(
                    f"VerifyPolicy: a reminder or escalation at {t} s must come after the request and before it "
                    f"expires (expires_in={self.expires_in}); e.g. remind_after=(600,), escalate_after=1800"
                )
        object.__setattr__(self, "remind_after", tuple(sorted(float(t) for t in reminders)))


Invoke = Callable[[dict[str, Any], "ToolContext"], Any]


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A registered tool.

    ``invoke(call_args, ctx)`` runs the handler: it returns the value, or an awaitable when
    ``is_async``. ``validator`` is compiled at registration; ``input_schema`` is the JSON
    Schema (2020-12) the model and the explorer see.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    validator: ArgumentsValidator
    invoke: Invoke
    is_async: bool
    scopes: tuple[str, ...] = ()
    mutating: bool = True  # fail closed: what says nothing about its effect is treated as changing things
    confirm: bool = False
    timeout: float = 30.0
    version: str | None = None
    output_schema: dict[str, Any] | None = None
    verify: VerifyPolicy | None = None
    tags: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: Running it twice has the effect of running it once: a run whose lease ended is retried.
    idempotent: bool = False
    #: A ``def`` tool runs on a worker thread (True, the default) or, declared ``blocking=False``, on the
    #: event loop itself (no thread hop; for a function that returns in microseconds and never waits).
    blocking: bool = True
    #: Whether the tool said if it changes things (``mutating=True`` or ``False``). An undeclared
    #: effect is never taken as harmless: such a tool is ``mutating`` for every gate.
    effect_declared: bool = False

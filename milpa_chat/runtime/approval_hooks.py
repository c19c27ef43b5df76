"""What plugs into an :class:`~milpa_chat.runtime.ApprovalDesk`: its :class:`ApprovalHooks`, and the words they
share with it (:class:`Change`, :class:`Delivery`).

The desk is built with its hooks (``ApprovalDesk(store, hooks=ApprovalHooks(...))``); whatever is plugged in
later goes through one method, :meth:`ApprovalDesk.install` (a chat layer's openers and follower, a
registry's audit, checker and runner, an attached trail). The desk sees the pipeline through one callable,
:attr:`ApprovalHooks.run` (run an approved call as its requester, then settle it), never the registry.

A leaf of the approvals: it names the desk's collaborators only as protocols and callables.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from milpa_chat.runtime.events import EventDispatcher

if TYPE_CHECKING:
    from milpa_chat.runtime.approval import Approval
    from milpa_chat.runtime.audit import AuditLogger
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.result import ToolResult

__all__ = [
    "ApprovalHooks",
    "Change",
    "Check",
    "Delivery",
    "Follower",
    "Opener",
    "Reminder",
    "RunApproved",
    "TrailHook",
]


@dataclass(frozen=True, slots=True)
class Change:
    """What one write did. ``claimed``: this caller holds the lease and must run the tool now.
    ``message`` is the short answer for the person who acted."""

    approval: Approval
    event: str
    claimed: bool = False
    message: str = ""


@dataclass(frozen=True, slots=True)
class Delivery:
    """The outcome of delivering one effect: ``key`` is what was shown (a card key or a report key),
    ``message_id`` a card's id once sent; ``error`` and ``retry_in`` when it failed."""

    key: str | None = None
    message_id: str | None = None
    error: str | None = None
    retry_in: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


#: Adds the cards and the requester's route to a record before it is first written.
Opener = Callable[[dict[str, Any], "ToolContext"], None]
#: Called inside the write of a reminder or an escalation (``"reminder"`` / ``"escalation"``) to add its cards.
Reminder = Callable[[dict[str, Any], str], None]
#: Runs what a decision claimed and delivers what it owes.
Follower = Callable[[Change], Awaitable[None]]
#: Re-validates and re-authorizes edited arguments: the checked wire arguments, or raises ``ApprovalRefused``.
Check = Callable[["Approval", dict[str, Any]], Awaitable[dict[str, Any]]]
#: The pipeline as the desk sees it: run a claimed approval as ``ctx`` (its requester) and settle it.
RunApproved = Callable[..., Awaitable["ToolResult"]]


class TrailHook(Protocol):
    """The hash-chained trail as the desk and its deliverers write to it (:class:`~milpa_chat.runtime.AuditTrail`)."""

    async def record(self, change: Change) -> None: ...

    async def append(self, kind: str, subject: str, fields: Mapping[str, Any]) -> Any: ...

    async def shown(self, approval_id: str, card: Mapping[str, Any], state: str, args_digest: str | None) -> None: ...


@dataclass(slots=True)
class ApprovalHooks:
    """Everything a desk calls out to. Built with the desk; changed only through :meth:`install`."""

    #: Where ``verification.*`` events go.
    dispatcher: EventDispatcher = field(default_factory=EventDispatcher)
    openers: list[Opener] = field(default_factory=list)
    reminders: list[Reminder] = field(default_factory=list)
    #: Runs what a decision claimed and delivers what it owes; none: an approved record waits, due.
    follower: Follower | None = None
    #: How an edit is checked (a registry installs its own; a chat layer one with the requester as they are now).
    checker: Check | None = None
    #: Where every change is audited (a registry installs its ``AuditLogger``).
    audit: AuditLogger | None = None
    #: The hash-chained trail in the store, when one is attached (``AuditTrail(store).attach(registry)``).
    trail: TrailHook | None = None
    #: Runs an approved call through the pipeline (``ToolRegistry.run_approval`` installs itself).
    run: RunApproved | None = None

    def install(
        self,
        *,
        opener: Opener | None = None,
        reminder: Reminder | None = None,
        follower: Follower | None = None,
        checker: Check | None = None,
        audit: AuditLogger | None = None,
        trail: TrailHook | None = None,
        run: RunApproved | None = None,
    ) -> ApprovalHooks:
        """Add an opener or a reminder, set the others that are given. Returns the hooks, for chaining.

        An opener or a reminder made by the same code as one already installed (the same method of the same
        object, or a function defined at the same place) takes its place: installing twice is installing once."""
        if opener is not None:
            self.openers[:] = [*(o for o in self.openers if not _same(o, opener)), opener]
        if reminder is not None:
            self.reminders[:] = [*(r for r in self.reminders if not _same(r, reminder)), reminder]
        if follower is not None:
            self.follower = follower
        if checker is not None:
            self.checker = checker
        if audit is not None:
            self.audit = audit
        if trail is not None:
            self.trail = trail
        if run is not None:
            self.run = run
        return self


def _same(old: Callable[..., Any], new: Callable[..., Any]) -> bool:
    if hasattr(new, "__self__"):  # a bound method: the same method of the same object
        return bool(old == new)
    code = getattr(new, "__code__", None)
    return code is not None and getattr(old, "__code__", None) is code

"""What the pipeline's steps may use: a frozen :class:`Services`, carried by every :class:`Call`.

A step sees the services (policy, audit, events, limits, rate limiter, standing grants, approvals,
confirmations, verifiers) and the call, never the :class:`~milpa_chat.runtime.ToolRegistry` that assembled
them. The registry builds one ``Services`` and builds it anew (``dataclasses.replace``) whenever a service is
installed or replaced after construction (``registry.grants = ...``, ``registry.rate_limiter = ...``), so a
call always sees the registry as it is when the call starts.

This module names the other runtime modules only for types, and none of them imports it back except the
pipeline's own (steps, gates, execute): the registry points down at it, the steps read from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from milpa_chat.runtime.stamps import fail

if TYPE_CHECKING:
    from milpa_chat.runtime.approval import Approval
    from milpa_chat.runtime.approval_hooks import TrailHook
    from milpa_chat.runtime.approvals import ApprovalDesk
    from milpa_chat.runtime.audit import AuditLogger
    from milpa_chat.runtime.confirm import ConfirmationTokenStore
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.definition import ToolDefinition, ValidatedArgs
    from milpa_chat.runtime.events import EventDispatcher
    from milpa_chat.runtime.limits import PayloadLimits
    from milpa_chat.runtime.policy import PolicyGate
    from milpa_chat.runtime.ratelimit import RateLimiter
    from milpa_chat.runtime.result import ErrorCode, ToolResult
    from milpa_chat.runtime.verification import HumanVerifier
    from milpa_chat.runtime.verifier import Verifier

__all__ = ["Call", "Drafted", "Replay", "Services", "StandingAnswer", "StandingGate"]


class Drafted(Protocol):
    """A standing grant a loosening drafted, as the runtime sees it: its id (the card signing it is the
    :class:`~milpa_chat.runtime.approval.Approval` beside it)."""

    @property
    def id(self) -> str: ...


@dataclass(frozen=True, slots=True)
class StandingAnswer:
    """What the standing grants said of a call that runs outside the pipeline (an agent framework's tool).

    ``lent``: a grant lends it (its use is counted already) and it runs without a card; else a stop refuses it
    with ``sentence``. ``grant``: the grant that lent or stopped it (``None`` for a record that does not read);
    ``receipts``: on a loan, the measurements it ran on (operation, content, instrument, holds, at);
    ``check``: on a stop, the check that refused."""

    lent: bool
    grant: str | None
    sentence: str
    receipts: tuple[Mapping[str, Any], ...] = ()
    check: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """What the approval record keeps of it (``Approval.data["standing"]``)."""
        return {
            "lent": self.lent,
            "grant": self.grant,
            "sentence": self.sentence,
            "receipts": [dict(r) for r in self.receipts],
            "check": self.check,
        }


@runtime_checkable
class StandingGate(Protocol):
    """``registry.grants``: judged before an approval is opened, and what a loosening of an approval mode
    (:mod:`milpa_chat.runtime.modes`) is drafted as."""

    async def gate(self, call: Call) -> ToolResult | None:
        """A result (lent, or refused by a stop), or ``None`` to go on to the approval."""
        ...

    async def consult(self, tool: str, args: Mapping[str, Any], ctx: ToolContext) -> StandingAnswer | None:
        """For a call the kit does not run itself (``tool`` proposed by an agent framework's model, for the
        person of ``ctx``): lent (its use counted), stopped, or ``None`` to go on to the approval."""
        ...

    async def draft_loosening(
        self, ctx: ToolContext, seconds: float, *, via: str, note: str | None = None
    ) -> Sequence[tuple[Drafted, Approval]]:
        """Time-boxed standing grants for ``ctx``'s seat over the read-only operations offered grants, each a
        draft with the approval that signs it; raises ``ApprovalRefused`` when there is nothing to draft."""
        ...


@dataclass(frozen=True, slots=True)
class Services:
    """The services one call runs with. Frozen: a registry that installs a service builds a new one."""

    #: The registered tools by name (a read-only view that follows registration).
    tools: Mapping[str, ToolDefinition]
    policy: PolicyGate
    audit: AuditLogger
    #: Where ``tool.executing`` / ``tool.executed`` / ``tool.failed`` go.
    events: EventDispatcher
    limits: PayloadLimits
    rate_limiter: RateLimiter | None
    #: Standing grants, judged before an approval is opened (``None``: none installed).
    grants: StandingGate | None
    #: The one desk where approvals are opened, decided, claimed and finished.
    approvals: ApprovalDesk
    confirmations: ConfirmationTokenStore
    #: The human verifier over :attr:`approvals` (replays of verification requests are checked with it).
    verifier: HumanVerifier
    #: The verifier the verify gate asks (the human one unless the registry was given another).
    tool_verifier: Verifier

    @property
    def dispatcher(self) -> EventDispatcher:
        """:attr:`events` under the registry's name for it."""
        return self.events

    @property
    def trail(self) -> TrailHook | None:
        """The hash-chained trail attached to the desk, if any."""
        return self.approvals.hooks.trail


@dataclass(frozen=True, slots=True)
class Replay:
    """A second call that redeems a confirm token or runs an approved verification."""

    approval: Approval

    @property
    def args(self) -> dict[str, Any]:
        return self.approval.args


@dataclass(slots=True)
class Call:
    """One call on its way through the steps: what the caller sent and what the steps found."""

    services: Services
    name: Any
    args: Any
    ctx: ToolContext
    t0: float
    #: Set by ``resolve``.
    tool: ToolDefinition = None  # type: ignore[assignment]
    #: Set by ``replay lookup`` when the call redeems a confirm token or runs an approved request.
    replay: Replay | None = None
    #: Set by ``validate``.
    validated: ValidatedArgs = None  # type: ignore[assignment]

    def fail(self, code: ErrorCode | str, message: str, data: Any = None, **meta: Any) -> ToolResult:
        return fail(self.tool.name, self.ctx, self.t0, code, message, data, **meta)

"""``ConfirmationTokenStore``: one-time confirm tokens, as a view over the one ``Approval``.

A token *is* the id of a ``confirm`` approval: the arguments it snapshots, the tool and the
principal it is bound to, its expiry and its state live in that record and nowhere else. Redeeming
it is the requester's ``confirm`` decision (one compare-and-set, so of any number of concurrent
redemptions exactly one gets the arguments); cancelling or expiring the approval kills the token
in the same write. A redemption for another tool or principal is refused and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from milpa_chat.runtime.approval import Approval, ApprovalRefused
from milpa_chat.runtime.approvals import ApprovalDesk, Change

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.store.base import Store

__all__ = ["ConfirmationToken", "ConfirmationTokenStore", "PendingConfirmation"]


@dataclass(frozen=True, slots=True)
class ConfirmationToken:
    token: str
    expires_at: datetime
    action_summary: str


@dataclass(frozen=True, slots=True)
class PendingConfirmation:
    """A live token's state, read without redeeming it."""

    token: str
    tool: str
    args: dict[str, Any]
    principal: str | None
    action_summary: str
    expires_at: datetime
    version: int


class ConfirmationTokenStore:
    """Confirm tokens over ``desk`` (or over a store: a desk of its own is made on it)."""

    def __init__(self, desk: ApprovalDesk | Store, *, ttl: float = 60.0) -> None:
        if ttl <= 0:
            raise ValueError(f"confirm token ttl must be positive seconds, got {ttl}")
        self.desk = desk if isinstance(desk, ApprovalDesk) else ApprovalDesk(desk)
        self.ttl = ttl

    @property
    def store(self) -> Store:
        return self.desk.store

    async def create(
        self,
        tool: str,
        args: dict[str, Any],
        action_summary: str,
        *,
        principal: str | None = None,
        ctx: ToolContext | None = None,
        mutating: bool = True,
        idempotent: bool = False,
    ) -> ConfirmationToken:
        """Open a ``confirm`` approval for ``ctx`` (or a bare context naming ``principal``)."""
        from milpa_chat.runtime.context import ToolContext

        requester = ctx if ctx is not None else ToolContext(principal=principal)
        approval = await self.desk.open(
            "confirm",
            requester,
            tool=tool,
            args=args,
            summary=action_summary,
            expires_in=self.ttl,
            mutating=mutating,
            idempotent=idempotent,
            reason="This changes data: confirm to run it, or cancel.",
        )
        return ConfirmationToken(approval.id, datetime.fromtimestamp(approval.expires_at, UTC), action_summary)

    async def approval(self, token: object, tool: str, principal: str | None) -> Approval | None:
        """The pending, unexpired confirm approval behind ``token`` for this tool and principal."""
        approval = await self.desk.get(token)
        if (
            approval is None
            or approval.kind != "confirm"
            or approval.state != "pending"
            or approval.tool != tool
            or approval.requester_principal != principal
            or approval.expires_at <= self.store.clock()
        ):
            return None
        return approval

    async def peek(self, token: object) -> PendingConfirmation | None:
        """The live token's state, without redeeming it (``None`` when unknown, decided or expired)."""
        approval = await self.desk.get(token)
        if approval is None or approval.kind != "confirm" or approval.state != "pending":
            return None
        if approval.expires_at <= self.store.clock():
            return None
        return PendingConfirmation(
            approval.id,
            str(approval.tool),
            approval.args,
            approval.requester_principal,
            str(approval.data.get("summary", "")),
            datetime.fromtimestamp(approval.expires_at, UTC),
            approval.version,
        )

    async def redeem(self, token: str, tool: str, ctx: ToolContext) -> Change | None:
        """The requester's ``confirm``: the winner gets the claimed approval (and must run it and
        :meth:`ApprovalDesk.finish` it); ``None`` when the token is unknown, dead or not theirs."""
        if await self.approval(token, tool, ctx.principal) is None:
            return None
        try:
            return await self.desk.decide(token, "confirm", ctx, follow=False)
        except ApprovalRefused:
            return None

    async def consume(self, token: str, tool: str, *, principal: str | None = None) -> dict[str, Any] | None:
        """Seed name for :meth:`redeem`: the snapshotted arguments, exactly once. The approval stays
        ``executing`` until its run is finished (through the registry) or its lease ends."""
        from milpa_chat.runtime.context import ToolContext

        change = await self.redeem(token, tool, ToolContext(principal=principal))
        return None if change is None else change.approval.args

    async def cancel(self, token: str, ctx: ToolContext) -> bool:
        """The requester cancels: the approval becomes ``cancelled`` and the token dead, in one write."""
        try:
            await self.desk.decide(token, "cancel", ctx)
        except ApprovalRefused:
            return False
        return True

    async def is_valid(self, token: str, tool: str) -> bool:
        pending = await self.peek(token)
        return pending is not None and pending.tool == tool

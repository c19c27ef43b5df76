"""``HumanVerifier``: verification requests, as a view over the one ``Approval``.

* The decider is the authenticated caller (a ``ToolContext``), never an argument.
* The requester cannot decide their own request unless the policy allows it (``four_eyes=False``).
* A request is decided once: every decision goes through :meth:`ApprovalDesk.decide`, one
  compare-and-set on the record, so two approvers at the same moment, a double tap or a redelivered
  update change it at most once — and a decision here edits every card a chat layer shows.
* Requests are ``verification`` approvals in the store and survive restarts.

States: ``pending -> approved | rejected | cancelled | expired``, then for tool requests
``approved -> executing -> executed | failed | effect_uncertain``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from milpa_chat.runtime.approval import Approval, ApprovalRefused, state_message
from milpa_chat.runtime.approvals import ApprovalDesk, Change
from milpa_chat.runtime.definition import VerifyPolicy
from milpa_chat.runtime.events import EventDispatcher
from milpa_chat.runtime.verifier import VerificationRequest, VerificationResult

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.definition import ToolDefinition
    from milpa_chat.runtime.result import ToolResult
    from milpa_chat.store.base import Store

__all__ = ["HumanVerifier", "Verification", "VerificationRefused"]

NAME = "human_verifier"
#: A verification request is an :class:`Approval` of kind ``verification``.
Verification = Approval
#: Seed name of :class:`ApprovalRefused`.
VerificationRefused = ApprovalRefused


class HumanVerifier:
    """Opens and decides verification requests. ``HumanVerifier()`` keeps them in a memory store;
    pass the registry's store (or its :class:`ApprovalDesk`) to share them with everything else."""

    name = NAME

    def __init__(self, store: Store | ApprovalDesk | None = None, *, dispatcher: EventDispatcher | None = None) -> None:
        if isinstance(store, ApprovalDesk):
            self.desk = store
        else:
            from milpa_chat.store.memory import MemoryStore

            self.desk = ApprovalDesk(store if store is not None else MemoryStore(), dispatcher=dispatcher)

    @property
    def store(self) -> Store:
        return self.desk.store

    @property
    def dispatcher(self) -> EventDispatcher:
        return self.desk.hooks.dispatcher

    # ---------------------------------------------------------------- open
    async def request(
        self,
        subject: str,
        ctx: ToolContext,
        *,
        policy: VerifyPolicy | None = None,
        reason: str | None = None,
        payload: Mapping[str, Any] | None = None,
        tool: str | None = None,
        args: Mapping[str, Any] | None = None,
        summary: str | None = None,
        mutating: bool = True,
        idempotent: bool = False,
    ) -> Verification:
        """Open a request on behalf of ``ctx`` (the requester); dispatches ``verification.requested``."""
        if not isinstance(subject, str) or not subject.strip():
            raise ApprovalRefused("subject is required: say what needs approval", code="VALIDATION_ERROR")
        policy = policy or VerifyPolicy()
        return await self.desk.open(
            "verification",
            ctx,
            tool=tool,
            args=args or {},
            summary=summary or subject.strip(),
            expires_in=policy.expires_in,
            policy=policy,
            subject=subject.strip(),
            reason=reason,
            payload=payload,
            mutating=mutating,
            idempotent=idempotent,
        )

    async def open_for_tool(
        self, tool: ToolDefinition, wire: dict[str, Any], ctx: ToolContext, summary: str
    ) -> Verification:
        scopes = ", ".join(tool.verify.approver_scopes) if tool.verify else ""
        return await self.request(
            f"tool:{tool.name}",
            ctx,
            policy=tool.verify,
            tool=tool.name,
            args=wire,
            summary=summary,
            reason=f"Needs approval by someone with: {scopes or 'any approver'}.",
            mutating=tool.mutating,
            idempotent=tool.idempotent,
        )

    async def verify(self, request: VerificationRequest, ctx: ToolContext) -> VerificationResult:
        """The :class:`~milpa_chat.runtime.Verifier` seam: open a request that people decide, so the
        answer is always ``pending``, with the request id they decide and its expiry."""
        req = await self.open_for_tool(request.tool, dict(request.args), ctx, request.summary)
        return VerificationResult.pending(
            NAME, req.id, expires_at=req.expires_at_iso, reason=f"Waiting for {request.policy.quorum} approver(s)."
        )

    # ---------------------------------------------------------------- read
    async def get(self, request_id: object) -> Verification | None:
        approval = await self.desk.get(request_id)
        return approval if approval is not None and approval.kind == "verification" else None

    async def pending(self) -> list[Verification]:
        return [a for a in await self.desk.listing(state="pending") if a.kind == "verification"]

    # -------------------------------------------------------------- decide
    async def grant(self, request_id: str, decider: ToolContext, reason: str | None = None) -> Verification:
        """Record one approval; the request becomes ``approved`` once the quorum is met."""
        return (await self._decide(request_id, "approve", decider, reason)).approval

    async def reject(self, request_id: str, decider: ToolContext, reason: str | None = None) -> Verification:
        return (await self._decide(request_id, "reject", decider, reason or "rejected")).approval

    async def cancel(self, request_id: str, requester: ToolContext) -> Verification:
        """The requester withdraws a pending request."""
        return (await self._decide(request_id, "cancel", requester, None)).approval

    async def _decide(self, request_id: str, decision: str, ctx: ToolContext, note: str | None) -> Change:
        if await self.get(request_id) is None:
            raise ApprovalRefused(f"Unknown verification request {request_id!r}.", code="NOT_FOUND")
        return await self.desk.decide(request_id, decision, ctx, note=note)

    async def expire_overdue(self) -> list[Verification]:
        """Expire every overdue pending request (read through the due index); returns those this call expired."""
        expired = []
        for approval in await self.desk.due(limit=10_000):
            if approval.kind == "verification" and approval.state == "pending":
                change = await self.desk.recover(approval)
                if change is not None and change.event == "expired":
                    expired.append(change.approval)
        return expired

    # ------------------------------------------------------------- execute
    async def check_executable(self, request_id: Any, tool: str, ctx: ToolContext) -> dict[str, Any] | str:
        """The approved arguments, or why this caller may not run them."""
        req = await self.get(request_id)
        if req is None:
            return f"Unknown verification request {request_id!r}."
        if req.tool != tool:
            return f"Verification request {req.id} was not opened for tool '{tool}'."
        if req.requester_principal != ctx.principal:
            return f"Verification request {req.id} belongs to another requester."
        if req.state != "approved":
            return "This request is still waiting for approval." if req.state == "pending" else state_message(req)
        return req.args

    async def finish(self, request: Verification, result: ToolResult) -> None:
        """``executing -> executed | failed`` by the holder of the claim ``request``."""
        await self.desk.finish(request, result)

"""``VerificationTool``: ``request_verification`` and ``resolve_verification`` as two ordinary tools.

Both run through the whole pipeline. ``resolve_verification`` takes the decider from the caller's
context — there is no ``principal`` argument — and can be restricted with ``resolve_scopes``.
Neither is gated by the confirm-token step: opening then resolving a request already is the
two-phase protocol.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.declare import Param
from milpa_chat.runtime.definition import VerifyPolicy
from milpa_chat.runtime.result import ErrorCode, ToolResult
from milpa_chat.runtime.verification import HumanVerifier, VerificationRefused

if TYPE_CHECKING:
    from milpa_chat.runtime.registry import ToolRegistry

__all__ = ["REQUEST_NAME", "RESOLVE_NAME", "VerificationTool"]

REQUEST_NAME = "request_verification"
RESOLVE_NAME = "resolve_verification"


class VerificationTool:
    """Registers the two verification tools on a registry."""

    def __init__(
        self,
        verifier: HumanVerifier,
        *,
        resolve_scopes: Sequence[str] = (),
        request_scopes: Sequence[str] = (),
        approver_scopes: Sequence[str] = (),
        allow_self_approval: bool = False,
        expires_in: float = 3600.0,
    ) -> None:
        self.verifier = verifier
        self.resolve_scopes = tuple(resolve_scopes)
        self.request_scopes = tuple(request_scopes)
        self.approver_scopes = tuple(approver_scopes)
        self.allow_self_approval = allow_self_approval
        self.expires_in = expires_in

    def register(self, registry: ToolRegistry) -> None:
        """Add ``request_verification`` and ``resolve_verification`` to ``registry``."""
        from milpa_chat.runtime.declare import definitions_from, tool

        @tool(
            REQUEST_NAME,
            "Open a verification request that another person approves or rejects.",
            scopes=self.request_scopes,
            mutating=True,
        )
        async def request_verification(
            ctx: ToolContext,
            subject: Annotated[str, Param("What needs approval, e.g. gate:report.publish")],
            policy: Annotated[Literal["single", "dual"], Param("single: one approver; dual: two")] = "single",
            reason: Annotated[str | None, Param("Why the approval is needed (shown to approvers)")] = None,
        ) -> ToolResult:
            return await self.handle_request({"subject": subject, "policy": policy, "reason": reason}, ctx)

        @tool(
            RESOLVE_NAME,
            "Approve (grant) or reject a pending verification request as the calling user.",
            scopes=self.resolve_scopes,
            mutating=True,
        )
        async def resolve_verification(
            ctx: ToolContext,
            request_id: Annotated[str, Param("The request_id request_verification returned")],
            decision: Annotated[Literal["grant", "reject"], Param("grant or reject")],
            reason: Annotated[str | None, Param("Why (shown on the decided card)")] = None,
        ) -> ToolResult:
            return await self.handle_resolve({"request_id": request_id, "decision": decision, "reason": reason}, ctx)

        for fn in (request_verification, resolve_verification):
            for defn in definitions_from(fn):
                registry.add(dataclasses.replace(defn, extra={"self_confirming": True}))

    async def handle_request(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        policy_name = args.get("policy") or "single"
        policy = VerifyPolicy(
            approver_scopes=self.approver_scopes,
            four_eyes=not self.allow_self_approval,
            quorum=2 if policy_name == "dual" else 1,
            expires_in=self.expires_in,
        )
        try:
            req = await self.verifier.request(args["subject"], ctx, policy=policy, reason=args.get("reason"))
        except VerificationRefused as exc:
            return ToolResult.error(str(exc), {"field": "subject", "message": str(exc)}, code=exc.code)
        subject = req.data["subject"]
        message = (
            f"Verification required for '{subject}' (policy: {policy_name}). Another person resolves it "
            f"with resolve_verification, decision=grant|reject, request_id={req.id}."
        )
        return ToolResult.confirmation(
            message,
            {"subject": subject, "policy": policy_name, "request_id": req.id, "expires_at": req.expires_at_iso},
            "verify",
            subject,
            subject,
        ).with_meta(approval_id=req.id, requires_verification=True)

    async def handle_resolve(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        rid, decision, reason = args["request_id"], args["decision"], args.get("reason")
        try:
            if decision == "grant":
                req = await self.verifier.grant(rid, ctx, reason)
            else:
                req = await self.verifier.reject(rid, ctx, reason)
        except VerificationRefused as exc:
            code = ErrorCode.NOT_FOUND if exc.code == "NOT_FOUND" else ErrorCode.FORBIDDEN
            return ToolResult.error(str(exc), {"request_id": rid}, code=code)
        status = {"pending": "pending", "rejected": "failed"}.get(req.state, "passed")
        label = req.data["subject"] or rid
        data = {
            "status": status,
            "reason": reason if decision == "reject" else None,
            "verifier": self.verifier.name,
            "principal": ctx.principal,
            "missing": [],
            "metadata": {"reason": reason} if decision == "grant" and reason else {},
            "request_id": rid,
            "state": req.state,
            "approvals": len(req.votes),
            "quorum": req.quorum,
        }
        if status == "pending":
            message = f"Approval recorded for '{label}': {data['approvals']} of {data['quorum']} approvers so far."
        else:
            message = f"Verification {'granted' if status == 'passed' else 'rejected'} for '{label}'."
        return ToolResult.success(data, message, {"verification_status": status})

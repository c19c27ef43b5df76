"""``VerificationTool``: ``request_verification`` and ``resolve_verification`` as two ordinary tools.

Both run through the whole pipeline. ``resolve_verification`` takes the decider from the caller's
context — there is no ``principal`` argument — and can be restricted with ``resolve_scopes``.
Neither is gated by the confirm-token step: opening then resolving a request already is the
two-phase protocol.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from milpa_chat.runtime.definition import VerifyPolicy
from milpa_chat.runtime.result import ErrorCode, ToolResult
from milpa_chat.runtime.verification import HumanVerifier, VerificationRefused

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.registry import ToolRegistry

__all__ = ["REQUEST_NAME", "RESOLVE_NAME", "VerificationTool"]

REQUEST_NAME = "request_verification"
RESOLVE_NAME = "resolve_verification"

REQUEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "subject": {"type": "string", "minLength": 1, "description": "What needs approval, e.g. gate:report.publish"},
        "policy": {"type": "string", "enum": ["single", "dual"], "default": "single",
                   "description": "single: one approver; dual: two distinct approvers"},
        "reason": {"type": "string", "description": "Why the approval is needed (shown to approvers)"},
    },
    "required": ["subject"],
    "additionalProperties": False,
}
RESOLVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "request_id": {"type": "string", "minLength": 1},
        "decision": {"type": "string", "enum": ["grant", "reject"]},
        "reason": {"type": "string"},
    },
    "required": ["request_id", "decision"],
    "additionalProperties": False,
}


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
        from milpa_chat.runtime.declare import definition_from_schema

        for name, description, schema, handler, scopes in (
            (REQUEST_NAME, "Open a verification request that another person approves or rejects.",
             REQUEST_SCHEMA, self.handle_request, self.request_scopes),
            (RESOLVE_NAME, "Approve (grant) or reject a pending verification request as the calling user.",
             RESOLVE_SCHEMA, self.handle_resolve, self.resolve_scopes),
        ):
            defn = definition_from_schema(name, description, schema, handler, scopes=scopes, mutating=True)
            registry.add(dataclasses.replace(defn, extra={"self_confirming": True}))

    async def handle_request(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        policy_name = args.get("policy") or "single"
        policy = VerifyPolicy(
            approver_scopes=self.approver_scopes, four_eyes=not self.allow_self_approval,
            quorum=2 if policy_name == "dual" else 1, expires_in=self.expires_in,
        )
        try:
            req = await self.verifier.request(args["subject"], ctx, policy=policy, reason=args.get("reason"))
        except VerificationRefused as exc:
            return ToolResult.error(str(exc), {"field": "subject", "message": str(exc)}, code=exc.code)
        subject = req.value["subject"]
        message = (
            f"Verification required for '{subject}' (policy: {policy_name}). Another person resolves it "
            f"with resolve_verification, decision=grant|reject, request_id={req.id}."
        )
        return ToolResult.confirmation(
            message, {"subject": subject, "policy": policy_name, "request_id": req.id,
                      "expires_at": req.expires_at_iso}, "verify", subject, subject,
        )

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
        status = {"approved": "passed", "rejected": "failed"}.get(req.state, "pending")
        label = req.value["subject"] or rid
        data = {
            "status": status,
            "reason": reason if decision == "reject" else None,
            "verifier": self.verifier.name,
            "principal": ctx.principal,
            "missing": [],
            "metadata": {"reason": reason} if decision == "grant" and reason else {},
            "request_id": rid,
            "state": req.state,
            "approvals": len(req.value["grants"]),
            "quorum": req.value["policy"]["quorum"],
        }
        if status == "pending":
            message = (f"Approval recorded for '{label}': {data['approvals']} of {data['quorum']} "
                       "approvers so far.")
        else:
            message = f"Verification {'granted' if status == 'passed' else 'rejected'} for '{label}'."
        return ToolResult.success(data, message, {"verification_status": status})

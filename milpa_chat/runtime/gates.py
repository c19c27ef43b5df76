"""The pipeline's branches that stop a call before execution, as small functions of the services.

Kept apart from ``services.py`` so the happy path there reads top to bottom.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from time import perf_counter
from typing import TYPE_CHECKING, Any

from milpa_chat.runtime.result import ErrorCode, ToolResult
from milpa_chat.runtime.services import Replay
from milpa_chat.runtime.stamps import base_meta, fail, finish_meta, tool_name

if TYPE_CHECKING:
    from milpa_chat.runtime.approval import Approval
    from milpa_chat.runtime.audit import AuditLogger
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.definition import InvalidArguments, ToolDefinition
    from milpa_chat.runtime.services import Services

__all__ = [
    "INVALID_TOKEN",
    "UNKNOWN_REQUEST",
    "Replay",
    "action_summary",
    "ask_confirmation",
    "base_meta",
    "claim_replay",
    "fail",
    "finish_meta",
    "invalid",
    "load_replay",
    "not_found",
    "plan",
    "rate_limit",
    "tool_name",
    "verify",
]

INVALID_TOKEN = "Invalid or expired confirmation token"
UNKNOWN_REQUEST = "Unknown verification request; ask for approval again (call the tool without verification_id)."


def not_found(name: object, tools: Mapping[str, ToolDefinition], ctx: ToolContext) -> ToolResult:
    shown = tool_name(name)
    if type(name) is not str:
        return fail(
            shown,
            ctx,
            None,
            ErrorCode.TOOL_NOT_FOUND,
            f"Tool names are strings; got a {type(name).__name__}.",
            {"suggestions": []},
        )
    close = difflib.get_close_matches(shown, list(tools), n=3, cutoff=0.75) if len(name) <= 200 else []
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    return fail(shown, ctx, None, ErrorCode.TOOL_NOT_FOUND, f"Tool not found: {shown}.{hint}", {"suggestions": close})


def invalid(audit: AuditLogger, tool: str, ctx: ToolContext, t0: float, exc: InvalidArguments) -> ToolResult:
    message = str(exc)  # "path: message; path: message"
    audit.validation_failed(ctx, tool, message)
    return fail(
        tool,
        ctx,
        t0,
        ErrorCode.VALIDATION_ERROR,
        message,
        {"errors": [{"path": e.path, "message": e.message} for e in exc.errors]},
    )


async def rate_limit(
    services: Services, tool: ToolDefinition, wire: dict[str, Any], ctx: ToolContext, t0: float
) -> ToolResult | None:
    assert services.rate_limiter is not None
    denial = await services.rate_limiter.check(ctx, tool)
    if denial is None:
        return None
    services.audit.call(ctx, tool.name, wire, False, str(ErrorCode.RATE_LIMITED), (perf_counter() - t0) * 1000)
    retry = None if denial.retry_after == float("inf") else round(denial.retry_after, 3)
    return fail(tool.name, ctx, t0, ErrorCode.RATE_LIMITED, denial.reason, retry_after_seconds=retry)


def plan(services: Services, tool: ToolDefinition, wire: dict[str, Any], ctx: ToolContext, t0: float) -> ToolResult:
    """Plan mode: everything up to authorize ran; report what would happen, run nothing."""
    data = {
        "plan": {
            "tool": tool.name,
            "mutating": tool.mutating,
            "effect_declared": tool.effect_declared,
            "requires_confirmation": tool.verify is None and services.policy.requires_confirmation(ctx, tool),
            "requires_verification": tool.verify is not None,
            "scopes_required": list(tool.scopes),
            "timeout": tool.timeout,
            "args": services.audit.redact(wire),
        }
    }
    return ToolResult(
        True, data, f"Plan: '{tool.name}' would run (dry run, nothing executed).", None, base_meta(tool.name, ctx, t0)
    )


def action_summary(tool: str, wire: Mapping[str, Any], redact: Any) -> str:
    """``tool(key=value, ...)``: the first three scalar arguments, secrets redacted."""
    shown = redact(dict(wire))
    parts = [
        f"{k}={v}" for k, v in shown.items() if isinstance(v, str | int | float | bool) and not isinstance(v, dict)
    ][:3]
    return f"{tool}({', '.join(parts)})"


async def ask_confirmation(
    services: Services, tool: ToolDefinition, wire: dict[str, Any], ctx: ToolContext, t0: float
) -> ToolResult:
    """First call of a confirm tool: open a ``confirm`` approval (its id is the one-time token)."""
    from milpa_chat.runtime.approval import ApprovalRefused

    summary = action_summary(tool.name, wire, services.audit.redact)
    try:
        token = await services.confirmations.create(
            tool.name, wire, summary, ctx=ctx, mutating=tool.mutating, idempotent=tool.idempotent
        )
    except ApprovalRefused as exc:  # too many requests of this principal open already
        return fail(tool.name, ctx, t0, exc.code, str(exc))
    meta = base_meta(tool.name, ctx, t0)
    meta.update(type="confirmation", requires_confirmation=True, approval_id=token.token)
    data = {
        "requires_confirmation": True,
        "confirm_token": token.token,
        "action_summary": summary,
        "expires_at": token.expires_at.isoformat(timespec="seconds"),
        "mutating": tool.mutating,
    }
    return ToolResult(True, data, summary, None, meta)


async def verify(
    services: Services, tool: ToolDefinition, wire: dict[str, Any], ctx: ToolContext, t0: float
) -> ToolResult | None:
    """A ``verify=`` tool: ask the registry's verifier. ``None`` when it passed (the call goes on)."""
    from milpa_chat.runtime.approval import ApprovalRefused
    from milpa_chat.runtime.verifier import VerificationRequest

    assert tool.verify is not None
    summary = action_summary(tool.name, wire, services.audit.redact)
    try:
        answer = await services.tool_verifier.verify(VerificationRequest(tool, wire, summary), ctx)
    except ApprovalRefused as exc:  # too many requests of this principal open already
        return fail(tool.name, ctx, t0, exc.code, str(exc))
    if answer.is_satisfied:
        return None
    if answer.status != "pending":
        reason = answer.reason or f"'{tool.name}' was not verified by {answer.verifier}."
        services.audit.denied(ctx, tool.name, reason)
        return fail(tool.name, ctx, t0, ErrorCode.FORBIDDEN, reason, verification=answer.to_dict())
    meta = base_meta(tool.name, ctx, t0)
    meta.update(
        type="confirmation",
        requires_confirmation=True,
        requires_verification=True,
        action="verify",
        target=tool.name,
        target_id=answer.request_id,
        approval_id=answer.request_id,
    )
    data = {
        "requires_verification": True,
        "request_id": answer.request_id,
        "action_summary": summary,
        "expires_at": answer.expires_at,
        "approver_scopes": list(tool.verify.approver_scopes),
        "quorum": tool.verify.quorum,
        "four_eyes": tool.verify.four_eyes,
    }
    return ToolResult(
        True,
        data,
        f"'{tool.name}' needs approval: {summary}. Request {answer.request_id} is "
        f"waiting for {tool.verify.quorum} approver(s).",
        None,
        meta,
    )


async def load_replay(
    services: Services, tool: ToolDefinition, args: Mapping[str, Any], ctx: ToolContext
) -> Replay | ToolResult:
    """Look up (without claiming) the approval a replay will run; other arguments are inert."""
    token, vid = args.get("confirm_token"), args.get("verification_id")
    if token is not None:
        if type(token) is not str or len(token) > 200:
            return fail(tool.name, ctx, None, ErrorCode.VALIDATION_ERROR, INVALID_TOKEN)
        approval = await services.confirmations.approval(token, tool.name, ctx.principal)
        if approval is None:
            return fail(tool.name, ctx, None, ErrorCode.VALIDATION_ERROR, INVALID_TOKEN)
        return Replay(approval)
    if type(vid) is not str or len(vid) > 200:
        return fail(tool.name, ctx, None, ErrorCode.FORBIDDEN, UNKNOWN_REQUEST)
    problem = await services.verifier.check_executable(vid, tool.name, ctx)
    if isinstance(problem, str):
        return fail(tool.name, ctx, None, ErrorCode.FORBIDDEN, problem)
    approval = await services.verifier.get(vid)
    assert approval is not None
    return Replay(approval)


async def claim_replay(
    services: Services, tool: ToolDefinition, replay: Replay, ctx: ToolContext, t0: float
) -> Approval | ToolResult:
    """Atomically redeem the token / claim the approved request: the claimed approval when this caller won."""
    from milpa_chat.runtime.approval import ApprovalRefused

    if replay.approval.kind == "confirm":
        change = await services.confirmations.redeem(replay.approval.id, tool.name, ctx)
        if change is None:
            return fail(tool.name, ctx, t0, ErrorCode.VALIDATION_ERROR, INVALID_TOKEN)
        return change.approval
    try:
        return (await services.approvals.claim(replay.approval.id, ctx, tool=tool.name)).approval
    except ApprovalRefused as exc:
        return fail(tool.name, ctx, t0, ErrorCode.FORBIDDEN, str(exc))

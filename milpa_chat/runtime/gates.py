"""The pipeline's branches that stop a call before execution, as small functions of the registry.

Kept apart from ``registry.py`` so the happy path there reads top to bottom.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from time import perf_counter
from typing import TYPE_CHECKING, Any

from milpa_chat.runtime.result import ErrorCode, ToolResult

if TYPE_CHECKING:
    from milpa_chat.runtime.approval import Approval
    from milpa_chat.runtime.audit import AuditLogger
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.definition import InvalidArguments, ToolDefinition
    from milpa_chat.runtime.registry import ToolRegistry

INVALID_TOKEN = "Invalid or expired confirmation token"
UNKNOWN_REQUEST = "Unknown verification request; ask for approval again (call the tool without verification_id)."
_SURROGATE = re.compile("[\ud800-\udfff]")


def base_meta(tool: str, ctx: ToolContext, t0: float | None) -> dict[str, Any]:
    return {
        "tool": tool,
        "took_ms": 0.0 if t0 is None else round((perf_counter() - t0) * 1000, 3),
        "request_id": ctx.request_id,
        "channel": ctx.channel,
        "principal": ctx.principal,
    }


def fail(
    tool: str,
    ctx: ToolContext,
    t0: float | None,
    code: ErrorCode | str,
    message: str,
    data: Any = None,
    **meta: Any,
) -> ToolResult:
    m = base_meta(tool, ctx, t0)
    m["code"] = str(code)
    m.update(meta)
    m["type"] = "error"
    return ToolResult(False, data, None, message, m)


def finish_meta(result: ToolResult, tool: str, ctx: ToolContext, t0: float) -> ToolResult:
    """Add the registry's meta keys under the result's own (the result's keys win)."""
    return ToolResult(
        result.success,
        result.data,
        result.message,
        result.error,
        {**base_meta(tool, ctx, t0), **result.meta},
    )


def tool_name(name: object) -> str:
    """``name`` as results and logs show it: a tool name is a short string; anything else is named by its type."""
    if type(name) is not str:
        return f"<{type(name).__name__}>"
    if len(name) > 200 or not name.isprintable() or _SURROGATE.search(name):
        return ascii(name[:200])
    return name


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
    registry: ToolRegistry, tool: ToolDefinition, wire: dict[str, Any], ctx: ToolContext, t0: float
) -> ToolResult | None:
    assert registry.rate_limiter is not None
    denial = await registry.rate_limiter.check(ctx, tool)
    if denial is None:
        return None
    registry.audit.call(ctx, tool.name, wire, False, str(ErrorCode.RATE_LIMITED), (perf_counter() - t0) * 1000)
    retry = None if denial.retry_after == float("inf") else round(denial.retry_after, 3)
    return fail(tool.name, ctx, t0, ErrorCode.RATE_LIMITED, denial.reason, retry_after_seconds=retry)


def plan(registry: ToolRegistry, tool: ToolDefinition, wire: dict[str, Any], ctx: ToolContext, t0: float) -> ToolResult:
    """Plan mode: everything up to authorize ran; report what would happen, run nothing."""
    data = {
        "plan": {
            "tool": tool.name,
            "mutating": tool.mutating,
            "effect_declared": tool.effect_declared,
            "requires_confirmation": tool.verify is None and registry.policy.requires_confirmation(ctx, tool),
            "requires_verification": tool.verify is not None,
            "scopes_required": list(tool.scopes),
            "timeout": tool.timeout,
            "args": registry.audit.redact(wire),
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
    registry: ToolRegistry, tool: ToolDefinition, wire: dict[str, Any], ctx: ToolContext, t0: float
) -> ToolResult:
    """First call of a confirm tool: open a ``confirm`` approval (its id is the one-time token)."""
    from milpa_chat.runtime.approval import ApprovalRefused

    summary = action_summary(tool.name, wire, registry.audit.redact)
    try:
        token = await registry.confirmations.create(
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
    registry: ToolRegistry, tool: ToolDefinition, wire: dict[str, Any], ctx: ToolContext, t0: float
) -> ToolResult | None:
    """A ``verify=`` tool: ask the registry's verifier. ``None`` when it passed (the call goes on)."""
    from milpa_chat.runtime.approval import ApprovalRefused
    from milpa_chat.runtime.verifier import VerificationRequest

    assert tool.verify is not None
    summary = action_summary(tool.name, wire, registry.audit.redact)
    try:
        answer = await registry.tool_verifier.verify(VerificationRequest(tool, wire, summary), ctx)
    except ApprovalRefused as exc:  # too many requests of this principal open already
        return fail(tool.name, ctx, t0, exc.code, str(exc))
    if answer.is_satisfied:
        return None
    if answer.status != "pending":
        reason = answer.reason or f"'{tool.name}' was not verified by {answer.verifier}."
        registry.audit.denied(ctx, tool.name, reason)
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


@dataclass(frozen=True, slots=True)
class Replay:
    """A second call that redeems a confirm token or runs an approved verification."""

    approval: Approval

    @property
    def args(self) -> dict[str, Any]:
        return self.approval.args


async def load_replay(
    registry: ToolRegistry, tool: ToolDefinition, args: Mapping[str, Any], ctx: ToolContext
) -> Replay | ToolResult:
    """Look up (without claiming) the approval a replay will run; other arguments are inert."""
    token, vid = args.get("confirm_token"), args.get("verification_id")
    if token is not None:
        if type(token) is not str or len(token) > 200:
            return fail(tool.name, ctx, None, ErrorCode.VALIDATION_ERROR, INVALID_TOKEN)
        approval = await registry.confirmations.approval(token, tool.name, ctx.principal)
        if approval is None:
            return fail(tool.name, ctx, None, ErrorCode.VALIDATION_ERROR, INVALID_TOKEN)
        return Replay(approval)
    if type(vid) is not str or len(vid) > 200:
        return fail(tool.name, ctx, None, ErrorCode.FORBIDDEN, UNKNOWN_REQUEST)
    problem = await registry.verifier.check_executable(vid, tool.name, ctx)
    if isinstance(problem, str):
        return fail(tool.name, ctx, None, ErrorCode.FORBIDDEN, problem)
    approval = await registry.verifier.get(vid)
    assert approval is not None
    return Replay(approval)


async def claim_replay(
    registry: ToolRegistry, tool: ToolDefinition, replay: Replay, ctx: ToolContext, t0: float
) -> Approval | ToolResult:
    """Atomically redeem the token / claim the approved request: the claimed approval when this caller won."""
    from milpa_chat.runtime.approval import ApprovalRefused

    if replay.approval.kind == "confirm":
        change = await registry.confirmations.redeem(replay.approval.id, tool.name, ctx)
        if change is None:
            return fail(tool.name, ctx, t0, ErrorCode.VALIDATION_ERROR, INVALID_TOKEN)
        return change.approval
    try:
        return (await registry.approvals.claim(replay.approval.id, ctx, tool=tool.name)).approval
    except ApprovalRefused as exc:
        return fail(tool.name, ctx, t0, ErrorCode.FORBIDDEN, str(exc))

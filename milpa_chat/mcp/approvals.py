"""Approvals as an MCP client sees them: what is pending, where it is shown, how to learn the outcome.

A confirm or verify tool called over MCP opens the same durable approval as a chat does (the
runtime's gates open it for every caller). An MCP client is usually a model, so its calls are
model-made (``ToolContext.by_model``): it never decides, confirms or approves anything itself.

* A **confirm** request asks the person behind the client: through MCP elicitation (the card's
  facts, the arguments that will run and their digest; Confirm / Cancel) when the client declares
  the capability, in the same ``tools/call``; else on the card in that person's chat, when the
  caller is mapped to a chat identity (``[people]`` in identities.toml, :class:`McpServer`'s
  ``people``). A client that can do neither is told so; nothing runs.
* A **verification** is decided by approvers on their own surfaces.

Two built-in tools follow a request up, both only for the requester (anyone else is told the id is unknown):

* ``approval_status(approval_id, wait_seconds=0)``: the state, who decided what, when and where,
  the outcome and, once it ran, the recorded result. ``wait_seconds`` (at most 60) waits for the
  state to change first, so a client can block on a decision without polling hard.
* ``approval_run(approval_id)``: run what a person decided, exactly once, as the requester (an
  approved verification; a confirm request the person confirms through elicitation now). When it
  already ran (by this tool, or by an assistant that carries approved requests out), the recorded
  result is returned instead of running it again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from milpa_chat.mcp.tools import Reply, error_reply, reply_for
from milpa_chat.runtime.redaction import redact
from milpa_chat.runtime.result import ToolResult

if TYPE_CHECKING:
    from milpa_chat.runtime.approval import Approval
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.registry import ToolRegistry

__all__ = ["CONFIRM_SCHEMA", "MAX_WAIT", "ApprovalTools", "Ask", "status_of"]

#: Asks the person behind the MCP client (elicitation): ``(message, requested schema)`` ->
#: ``(action, content)``, action ``accept`` / ``decline`` / ``cancel``.
Ask = Callable[[str, dict[str, Any]], Awaitable[tuple[str, Mapping[str, Any] | None]]]

#: What the elicitation asks for: one yes/no the person answers.
CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "confirm": {
            "type": "boolean",
            "title": "Run it?",
            "description": "Yes runs exactly the arguments shown, once; no cancels it.",
        }
    },
    "required": ["confirm"],
}

log = logging.getLogger("milpa_chat.mcp")

#: The longest ``approval_status`` waits for a change, in seconds.
MAX_WAIT = 60.0
POLL = 0.2
_SURFACES = {"telegram": "Telegram", "slack": "Slack", "jupyter": "the notebook inbox", "web": "the web inbox"}
_SETTLED = frozenset({"executed", "failed", "rejected", "cancelled", "expired", "effect_uncertain"})


def _iso(ts: Any) -> str | None:
    return None if ts is None else datetime.fromtimestamp(float(ts), UTC).isoformat(timespec="seconds")


def _shown_to(a: Approval) -> list[dict[str, Any]]:
    return [
        {"surface": c["surface"], "role": c.get("role", "approver"), "sent": bool(c.get("message_id"))}
        for c in a.data.get("cards", [])
    ]


def _where(a: Approval) -> str:
    surfaces = sorted({c["surface"] for c in a.data.get("cards", []) if c.get("role", "approver") == "approver"})
    if not surfaces:
        return (
            "no chat shows it from this server; an approver can decide it with "
            f"`milpa-chat approvals approve {a.id} --as PRINCIPAL --store ...` or in the notebook's ApprovalInbox"
        )
    return "it is shown to the approvers on " + " and ".join(_SURFACES.get(s, s) for s in surfaces)


def _next(a: Approval, status_tool: str, run_tool: str) -> str:
    who = a.data.get("decided_by_name") or a.data.get("decided_by") or "someone"
    state, expires = a.state, a.expires_at_iso
    if state == "pending" and a.kind == "confirm":
        where = "on its card in your chat, or " if a.data.get("cards") else ""
        return (
            f"Only you (the person) can confirm this: {where}call {run_tool} with approval_id={a.id!r} and "
            f"answer the question your client shows (before {expires}), or leave it to expire; nothing runs "
            "until then."
        )
    if state == "pending":
        missing = a.quorum - len(a.votes)
        return (
            f"Waiting for {missing} approver(s): {_where(a)}. Call {status_tool} with approval_id={a.id!r} "
            f"(and wait_seconds up to {int(MAX_WAIT)} to wait for the decision); it expires at {expires}."
        )
    if state == "approved" and a.data.get("auto_run"):
        return f"Approved by {who}; it is being carried out. Call {status_tool} again for the result."
    if state == "approved":
        return f"Approved by {who}. Call {run_tool} with approval_id={a.id!r} to run it now (it runs once)."
    if state == "executing":
        return f"Approved by {who} and running now. Call {status_tool} again for the result."
    if state in ("executed", "failed"):
        return f"{a.data.get('outcome') or 'Done.'} The recorded result is in 'result'."
    if state == "effect_uncertain":
        return (
            "The run did not report back, so it may or may not have taken effect. The requester or an "
            "approver chooses Run again or Mark as done on the approval card."
        )
    if state == "rejected":
        return f"Rejected by {who}; nothing was done."
    if state == "cancelled":
        return f"Cancelled by {who}; nothing was done."
    return "It expired before anyone decided; nothing was done."


def status_of(a: Approval, *, status_tool: str = "approval_status", run_tool: str = "approval_run") -> dict[str, Any]:
    """What the requester may know of approval ``a``, with the next step spelled out (``next``)."""
    d = a.data
    status: dict[str, Any] = {
        "approval_id": a.id,
        "kind": a.kind,
        "tool": a.tool,
        "state": a.state,
        "summary": d.get("summary"),
        "requested_by": a.requester_name,
        "requested_at": _iso(d.get("created_at")),
        "expires_at": a.expires_at_iso,
        "shown_to": _shown_to(a),
    }
    if a.kind == "verification":
        status["approvals"] = {"required": a.quorum, "given": [v["name"] for v in a.votes]}
    if d.get("decided_at") is not None:
        status.update(
            decided_by=d.get("decided_by_name") or d.get("decided_by"),
            decided_at=_iso(d["decided_at"]),
            decided_via=d.get("decided_via"),
            note=d.get("decision_note"),
        )
    if d.get("outcome"):
        status["outcome"] = d["outcome"]
    recorded = d.get("result")
    if isinstance(recorded, Mapping):
        status["result"] = {k: recorded.get(k) for k in ("success", "data", "message", "error")}
    status["next"] = _next(a, status_tool, run_tool)
    return status


class ApprovalTools:
    """The two built-in MCP tools over ``registry``'s approvals (named ``status_tool`` / ``run_tool``)."""

    def __init__(
        self, registry: ToolRegistry, *, status_tool: str = "approval_status", run_tool: str = "approval_run"
    ) -> None:
        self.registry = registry
        self.status_tool = status_tool
        self.run_tool = run_tool

    def definitions(self) -> list[dict[str, Any]]:
        """The two tools in MCP wire shape (``name``, ``description``, ``inputSchema``, ``annotations``)."""
        ident = {
            "type": "string",
            "minLength": 1,
            "maxLength": 200,
            "description": "The approval id a pending call returned.",
        }
        return [
            {
                "name": self.status_tool,
                "description": "Report an approval you asked for: its state, who decided what, when and where, and "
                "once it ran, the result. wait_seconds waits (up to 60) for the state to change first.",
                "inputSchema": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["approval_id"],
                    "properties": {
                        "approval_id": ident,
                        "wait_seconds": {
                            "type": "number",
                            "minimum": 0,
                            "maximum": MAX_WAIT,
                            "default": 0,
                            "description": "Seconds to wait for a change.",
                        },
                    },
                },
                "annotations": {
                    "readOnlyHint": True,
                    "destructiveHint": False,
                    "idempotentHint": True,
                    "openWorldHint": False,
                },
            },
            {
                "name": self.run_tool,
                "description": "Run a call you asked for once it is approved (or confirm your own confirm-kind "
                "request). It runs exactly once; if it already ran, the recorded result is returned.",
                "inputSchema": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["approval_id"],
                    "properties": {"approval_id": ident},
                },
                "annotations": {
                    "readOnlyHint": False,
                    "destructiveHint": True,
                    "idempotentHint": True,
                    "openWorldHint": True,
                },
            },
        ]

    async def pending(self, result: ToolResult, ctx: ToolContext) -> Reply | None:
        """The answer to a call that opened an approval (``None`` when ``result`` opened none)."""
        approval_id = result.meta.get("approval_id") if result.success else None
        if not isinstance(approval_id, str):
            return None
        approval = await self.registry.approvals.get(approval_id)
        if approval is None:
            return None
        approval = await self._present(approval)
        status = status_of(approval, status_tool=self.status_tool, run_tool=self.run_tool)
        what = "needs your confirmation" if approval.kind == "confirm" else "needs approval"
        text = f"'{approval.label}' {what}: {status['summary']}. Approval id: {approval.id}.\n{status['next']}"
        return Reply(text, {"approval": status})

    async def _present(self, approval: Approval) -> Approval:
        """Deliver the cards now when a chat assistant runs on this registry (else a worker's sweep does)."""
        follower = self.registry.approvals.hooks.follower
        if follower is None or not approval.data.get("cards"):
            return approval
        from milpa_chat.runtime.approvals import Change

        try:
            await follower(Change(approval, "requested"))
        except Exception:  # a surface failing never fails the call: the outbox retries
            log.exception("approval %s: delivering its cards failed; a sweep retries", approval.id)
        return await self.registry.approvals.get(approval.id) or approval

    async def _mine(self, approval_id: Any, ctx: ToolContext) -> Approval | Reply:
        approval = await self.registry.approvals.get(approval_id)
        if approval is None or approval.requester_principal != ctx.principal:
            return error_reply(f"Unknown approval {approval_id!r} (or not one you asked for).", code="NOT_FOUND")
        return approval

    async def status(self, args: Mapping[str, Any], ctx: ToolContext) -> Reply:
        found = await self._mine(args["approval_id"], ctx)
        if isinstance(found, Reply):
            return found
        wait = min(float(args.get("wait_seconds") or 0), MAX_WAIT)
        approval = await self._wait(found, wait) if wait > 0 else found
        status = status_of(approval, status_tool=self.status_tool, run_tool=self.run_tool)
        return Reply(f"{approval.label}: {status['state']}. {status['next']}", status)

    async def _wait(self, approval: Approval, seconds: float) -> Approval:
        """Until the state changes (a vote counts as a change) or ``seconds`` pass."""
        loop = asyncio.get_running_loop()
        until, seen = loop.time() + seconds, (approval.state, len(approval.votes))
        while approval.state not in _SETTLED and loop.time() < until:
            await asyncio.sleep(min(POLL, max(0.0, until - loop.time())))
            current = await self.registry.approvals.get(approval.id)
            if current is None:
                break
            approval = current
            if (approval.state, len(approval.votes)) != seen:
                break
        return approval

    async def run(self, args: Mapping[str, Any], ctx: ToolContext, ask: Ask | None = None) -> Reply:
        found = await self._mine(args["approval_id"], ctx)
        if isinstance(found, Reply):
            return found
        a = found
        if a.tool is None:
            return error_reply("This approval runs no tool; there is nothing to run.", code="CONFLICT")
        if a.state in ("executed", "failed") and isinstance(a.data.get("result"), Mapping):
            return reply_for(ToolResult.from_dict(a.data["result"]))
        if a.state == "executed":  # marked as done by a person: no result was recorded
            return Reply(str(a.data.get("outcome") or "Done."), {"result": None})
        if a.kind == "confirm" and a.state == "pending":
            return await self.confirm(a, ctx, ask)
        if a.kind != "verification" or a.state != "approved" or a.data.get("auto_run"):
            status = status_of(a, status_tool=self.status_tool, run_tool=self.run_tool)
            return Reply(
                f"Not run: {a.label} is {status['state']}. {status['next']}",
                {"approval": status},
                is_error=a.state not in ("executing", "approved"),
            )
        return await self._run_approved(a, ctx)

    async def _run_approved(self, a: Approval, ctx: ToolContext) -> Reply:
        """Claim an approved verification (approvers decided it) and run it once, as the requester."""
        from milpa_chat.runtime.approval import ApprovalRefused

        try:
            change = await self.registry.approvals.claim(a.id, ctx, tool=str(a.tool))
        except ApprovalRefused as exc:
            current = await self.registry.approvals.get(a.id)
            if current is not None and current.state in ("executed", "failed") and current.data.get("result"):
                return reply_for(ToolResult.from_dict(current.data["result"]))  # another call won the race
            return error_reply(str(exc), code=exc.code or "CONFLICT")
        return reply_for(await self.registry.run_approval(change.approval, ctx))

    async def confirm(self, a: Approval, ctx: ToolContext, ask: Ask | None) -> Reply:
        """Ask the person behind the client to confirm ``a`` (elicitation); run it once when they do.

        The model's call decides nothing: only the person's answer, taken as that person (the same
        principal, no longer model-made), through the one decision function."""
        if ask is None:
            status = status_of(a, status_tool=self.status_tool, run_tool=self.run_tool)
            where = (
                "Confirm it on its card in your chat. "
                if a.data.get("cards")
                else "This client cannot ask you (it does not support MCP elicitation) and your MCP identity is "
                "not mapped to a chat ([people] in identities.toml), so nobody can confirm it here. "
            )
            return Reply(
                f"Not run: {a.label} needs the person's confirmation. {where}Nothing was run.",
                {"approval": status},
                is_error=True,
            )
        try:
            action, content = await ask(confirm_question(a), CONFIRM_SCHEMA)
        except Exception as exc:  # the client failed to ask: nothing was decided
            log.warning("approval %s: the MCP client could not ask for confirmation: %s", a.id, exc)
            return error_reply(
                f"Not run: the client could not ask you to confirm {a.label} ({exc}); try {self.run_tool} again.",
                code="UNAVAILABLE",
            )
        if action == "cancel":
            return Reply(
                f"Not run: the question was dismissed; {a.label} is still waiting for your confirmation. "
                f"Call {self.run_tool} to be asked again.",
                {"approval": status_of(a)},
                is_error=True,
            )
        yes = action == "accept" and isinstance(content, Mapping) and content.get("confirm") is True
        return await self._decided(a, replace(ctx, by_model=False), yes)

    async def _decided(self, a: Approval, person: ToolContext, yes: bool) -> Reply:
        from milpa_chat.runtime.approval import ApprovalRefused

        desk = self.registry.approvals
        try:
            change = await desk.decide(
                a.id, "confirm" if yes else "cancel", person, via="mcp", follow=not yes, revision=a.revision
            )
        except ApprovalRefused as exc:
            return error_reply(f"Not run: {exc}", code=exc.code or "CONFLICT")
        if not yes:
            return Reply(f"Cancelled — {a.label} was not run.", {"approval": status_of(change.approval)})
        return reply_for(await self.registry.run_approval(change.approval, person))


def confirm_question(a: Approval) -> str:
    """What the person behind an MCP client is asked: what runs, with exactly which arguments, and their digest."""
    lines = [f"Confirm {a.label}?", str(a.data.get("summary") or a.label)]
    if a.data.get("reason"):
        lines.append(str(a.data["reason"]))
    lines.append("Arguments that will run:")
    lines += [f"  {k} = {v!r}" for k, v in redact(a.args).items()]
    lines.append(f"Digest: {a.data.get('digest')}")
    lines.append(f"Requested by {a.requester_name}; expires {a.expires_at_iso}.")
    return "\n".join(lines)

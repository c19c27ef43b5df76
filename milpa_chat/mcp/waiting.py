"""A call that waits for its person in the same ``tools/call``, with MCP progress notifications.

When a call opens an approval and its caller chose to wait (``wait_seconds`` for the tool in the
proxy file, or ``_meta["milpa-chat/wait_seconds"]`` on the request), the server keeps the request
open: every few seconds (and at each change: a vote, the decision) it sends a progress notification
with the request's progress token — when the client sent one — saying what it waits for; once a
person decided it runs the call exactly once (as ``approval_run`` would) and answers with the
result, or with the refusal. When the time is up it answers as a call that does not wait does:
the pending approval, for ``approval_status`` / ``approval_run``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from milpa_chat.mcp.approvals import status_of

if TYPE_CHECKING:
    from milpa_chat.mcp.approvals import ApprovalTools
    from milpa_chat.mcp.tools import Reply
    from milpa_chat.runtime.approval import Approval
    from milpa_chat.runtime.context import ToolContext

__all__ = ["META_WAIT", "Progress", "requested_wait", "wait_for_decision"]

#: The request ``_meta`` key a client sets to wait (seconds) for a decision inside the call.
META_WAIT = "milpa-chat/wait_seconds"
#: Seconds between two progress notifications while nothing changes.
HEARTBEAT = 5.0

#: ``progress(step, message)``: one progress notification to the client (a no-op without a token).
Progress = Callable[[float, str], Awaitable[None]]

_UNDECIDED = frozenset({"pending"})
_RUNNING = frozenset({"executing"})


def requested_wait(meta: Mapping[str, Any] | None, default: float, ceiling: float) -> float:
    """The seconds this request waits: ``_meta[META_WAIT]`` when the client set a number, else ``default``;
    never above ``ceiling``."""
    asked = (meta or {}).get(META_WAIT)
    if isinstance(asked, int | float) and not isinstance(asked, bool) and asked >= 0:
        return min(float(asked), ceiling)
    return min(default, ceiling)


def _waiting(a: Approval) -> bool:
    """Whether a person (or the run they started) is still to come."""
    if a.state in _UNDECIDED or a.state in _RUNNING:
        return True
    return a.state == "approved" and bool(a.data.get("auto_run"))


async def wait_for_decision(
    tools: ApprovalTools, approval_id: str, ctx: ToolContext, seconds: float, progress: Progress
) -> Reply | None:
    """Wait up to ``seconds`` for a person to decide ``approval_id``; then run it once (or report the refusal).

    ``None`` when the time ran out first (the caller answers with the pending approval)."""
    loop = asyncio.get_running_loop()
    until = loop.time() + seconds
    approval = await tools.registry.approvals.get(approval_id)
    step = 1.0
    while approval is not None and _waiting(approval):
        status = status_of(approval, status_tool=tools.status_tool, run_tool=tools.run_tool)
        await progress(step, f"{approval.label}: {status['state']}. {status['next']}")
        left = until - loop.time()
        if left <= 0:
            return None
        approval = await tools._wait(approval, min(left, HEARTBEAT))
        step += 1
    if approval is None:
        return None
    await progress(step, f"{approval.label}: {approval.state}.")
    reply = await tools.run({"approval_id": approval_id}, ctx)
    if reply.is_error and isinstance(reply.structured, dict) and isinstance(reply.structured.get("error"), dict):
        error = {**reply.structured["error"], "approval_id": approval_id}  # to follow up with approval_status
        return replace(reply, structured={**reply.structured, "error": error})
    return reply

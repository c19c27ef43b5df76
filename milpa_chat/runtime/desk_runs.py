"""Running an approved call: claiming it (exactly one caller wins), keeping its lease, settling its result."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from milpa_chat._failpoints import failpoint
from milpa_chat.runtime.approval import (
    Approval,
    ApprovalRefused,
    outcome_text,
    result_record,
    state_message,
)
from milpa_chat.runtime.approval_hooks import (
    Change,
)
from milpa_chat.runtime.approval_rules import Outcome
from milpa_chat.runtime.leases import holding

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.result import ToolResult

from milpa_chat.runtime.desk_core import DeskCore

log = logging.getLogger("milpa_chat.approvals")


class Running(DeskCore):
    """Claims approved runs, keeps their leases and settles them."""

    async def claim(self, approval_id: str, ctx: ToolContext, *, tool: str) -> Change:
        """``approved -> executing`` for the requester running an approved request (exactly one caller wins).

        This decides nothing (approvers did), so the requester's model may run it too: an MCP client's
        ``approval_run``, an agent resumed after the approval (a confirmed ``external`` record, too)."""

        def change(a: Approval, v: dict[str, Any], now: float) -> Outcome:
            if (a.kind != "verification" and not a.data.get("external")) or a.tool != tool:
                raise ApprovalRefused(f"Verification request {a.id} was not opened for tool '{tool}'.")
            if a.requester_principal != ctx.principal:
                raise ApprovalRefused(f"Verification request {a.id} belongs to another requester.")
            if a.state != "approved":
                message = "This request is still waiting for approval." if a.state == "pending" else state_message(a)
                raise ApprovalRefused(message, code="CONFLICT")
            self._claim(v, now)
            return "claimed", True, ""

        done = await self._change(approval_id, change)
        await self._event(done)
        return done

    async def renew(self, claimed: Approval) -> bool:
        """Extend the lease of a run still in progress (its holder calls this); ``False`` when the
        record moved on (another attempt owns it, or it settled). The write waits for no disk: a renewal
        a power cut loses leaves the one before it, which still runs for two thirds of a lease."""

        def change(a: Approval, v: dict[str, Any], now: float) -> Outcome | None:
            if a.state != "executing" or a.attempt != claimed.attempt:
                return None
            v["lease"] = {**(a.data.get("lease") or {}), "until": now + self.lease}
            return "renewed", False, ""

        try:
            done = await self._change(claimed.id, change, handoff=False, durable=False)
        except ApprovalRefused:
            return False
        return done.event == "renewed"

    #: ``async with desk.holding(claimed):`` keeps ``claimed``'s lease alive while the body runs (renewed every
    #: third of the lease, from a third of the lease on: a short run adds no write), so a long run is never
    #: mistaken for a lost one. The keeper itself (:func:`~milpa_chat.runtime.leases.holding`), as a method.
    holding = holding

    async def finish(self, claimed: Approval, result: ToolResult, *, follow: bool = True) -> Approval:
        """``executing -> executed | failed`` with the result, by the holder of ``claimed``'s lease.

        A result that arrives after the lease ended (the record is ``effect_uncertain``) still settles it.
        """

        def change(a: Approval, v: dict[str, Any], now: float) -> Outcome | None:
            if a.state not in ("executing", "effect_uncertain") or a.attempt != claimed.attempt:
                return None  # another attempt owns the record now
            v.update(
                state="executed" if result.success else "failed",
                lease=None,
                finished_at=now,
                result=result_record(result),
                outcome=outcome_text(result),
            )
            return "finished", False, ""

        try:
            done = await self._change(claimed.id, change, current=claimed)
        except ApprovalRefused:  # the record was removed meanwhile: nothing left to settle
            log.warning("approval %s vanished before its result was recorded", claimed.id)
            return claimed
        failpoint("run.finished")
        await self._follow(done, follow)
        return done.approval

    async def set_resume(self, approval_id: str, resume: Mapping[str, Any]) -> Approval:
        """Attach a paused agent run, resumed once the approval settles."""

        def change(a: Approval, v: dict[str, Any], now: float) -> Outcome:
            v["resume"] = dict(resume)
            return "resume_set", False, ""

        return (await self._change(approval_id, change)).approval

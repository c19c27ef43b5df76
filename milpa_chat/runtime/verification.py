"""``HumanVerifier``: durable requests that someone else approves or rejects (DESIGN Decision 7).

* The decider is the authenticated caller (a ``ToolContext``), never an argument.
* The requester cannot decide their own request unless the policy allows it (``four_eyes=False``).
* A request is decided once: every transition is a compare-and-set in the store, so two
  approvers at the same moment, a double tap or a redelivered update change it at most once.
* Requests live in the store (collection ``verifications``) and survive restarts.

States: ``pending -> approved | rejected | cancelled | expired``, then for tool requests
``approved -> executing -> executed | failed``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from milpa_chat.runtime.definition import VerifyPolicy
from milpa_chat.runtime.events import EventDispatcher

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.definition import ToolDefinition
    from milpa_chat.runtime.result import ToolResult
    from milpa_chat.store.base import Store

__all__ = ["HumanVerifier", "Verification", "VerificationRefused"]

COLLECTION = "verifications"
NAME = "human_verifier"
OPEN_STATES = frozenset({"pending"})
FINAL_STATES = frozenset({"rejected", "cancelled", "expired", "executed", "failed"})


class VerificationRefused(Exception):
    """A decision or execution that is not allowed; the message says why, for the person who tapped."""

    def __init__(self, message: str, *, code: str = "FORBIDDEN") -> None:
        super().__init__(message)
        self.code = code


def _iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


@dataclass(frozen=True, slots=True)
class Verification:
    """A read-only view of a stored request (``value`` holds every field; ``version`` is for CAS)."""

    id: str
    value: dict[str, Any]
    version: int

    def __getattr__(self, name: str) -> Any:
        try:
            return self.value[name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def state(self) -> str:
        return str(self.value["state"])

    @property
    def expires_at_iso(self) -> str | None:
        return _iso(self.value.get("expires_at"))

    def to_dict(self) -> dict[str, Any]:
        return dict(self.value)


class HumanVerifier:
    """Keeps verification requests in ``store`` and decides them atomically."""

    name = NAME

    def __init__(self, store: Store, *, dispatcher: EventDispatcher | None = None) -> None:
        self.store = store
        self.dispatcher = dispatcher or EventDispatcher()

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
    ) -> Verification:
        """Open a request on behalf of ``ctx`` (the requester); dispatches ``verification.requested``."""
        if not isinstance(subject, str) or not subject.strip():
            raise VerificationRefused("subject is required: say what needs approval", code="VALIDATION_ERROR")
        policy = policy or VerifyPolicy()
        now = self.store.clock()
        value: dict[str, Any] = {
            "subject": subject.strip(), "tool": tool, "args": dict(args or {}), "summary": summary or subject,
            "reason": reason, "payload": dict(payload or {}),
            "policy": {"approver_scopes": list(policy.approver_scopes), "four_eyes": policy.four_eyes,
                       "quorum": policy.quorum},
            "requested_by": ctx.principal, "requester": {"channel": ctx.channel, **_jsonable(ctx.extra)},
            "state": "pending", "grants": [], "created_at": now, "expires_at": now + policy.expires_in,
            "decided_by": None, "decided_at": None, "decided_via": None, "decision_reason": None,
            "result": None,
        }
        while True:
            rid = secrets.token_urlsafe(12)
            rec = await self.store.insert(COLLECTION, rid, value)
            if rec is not None:
                break
        req = Verification(rid, {"id": rid, **value}, rec.version)
        await self.dispatcher.dispatch("verification.requested", {"event": req})
        return req

    async def open_for_tool(
        self, tool: ToolDefinition, wire: dict[str, Any], ctx: ToolContext, summary: str
    ) -> Verification:
        return await self.request(
            f"tool:{tool.name}", ctx, policy=tool.verify, tool=tool.name, args=wire, summary=summary,
        )

    # ---------------------------------------------------------------- read
    async def get(self, request_id: str) -> Verification | None:
        if not isinstance(request_id, str) or not request_id:
            return None
        rec = await self.store.get(COLLECTION, request_id)
        return None if rec is None else Verification(rec.key, {"id": rec.key, **rec.value}, rec.version)

    async def pending(self) -> list[Verification]:
        recs = await self.store.scan(COLLECTION, where={"state": "pending"})
        return [Verification(r.key, {"id": r.key, **r.value}, r.version) for r in recs]

    # -------------------------------------------------------------- decide
    async def grant(self, request_id: str, decider: ToolContext, reason: str | None = None) -> Verification:
        """Record one approval; the request becomes ``approved`` once the quorum is met."""

        def change(v: dict[str, Any], now: float) -> str:
            self._check_decider(v, decider, "approve")
            grants = list(v["grants"])
            if any(g["principal"] == decider.principal for g in grants):
                need = v["policy"]["quorum"] - len(grants)
                raise VerificationRefused(f"You already approved this request; waiting for {need} more approver(s).")
            grants.append({"principal": decider.principal, "at": now, "via": decider.channel, "reason": reason})
            v["grants"] = grants
            if len(grants) >= v["policy"]["quorum"]:
                v.update(state="approved", decided_by=decider.principal, decided_at=now,
                         decided_via=decider.channel, decision_reason=reason)
            return "verification.granted" if v["state"] == "approved" else "verification.grant_recorded"

        return await self._transition(request_id, change)

    async def reject(self, request_id: str, decider: ToolContext, reason: str | None = None) -> Verification:
        def change(v: dict[str, Any], now: float) -> str:
            self._check_decider(v, decider, "reject")
            v.update(state="rejected", decided_by=decider.principal, decided_at=now,
                     decided_via=decider.channel, decision_reason=reason or "rejected")
            return "verification.rejected"

        return await self._transition(request_id, change)

    async def cancel(self, request_id: str, requester: ToolContext) -> Verification:
        """The requester withdraws a pending request."""

        def change(v: dict[str, Any], now: float) -> str:
            if v["requested_by"] != requester.principal:
                raise VerificationRefused("Only the person who asked can cancel this request.")
            v.update(state="cancelled", decided_by=requester.principal, decided_at=now,
                     decided_via=requester.channel)
            return "verification.cancelled"

        return await self._transition(request_id, change)

    async def expire_overdue(self) -> list[Verification]:
        """Move every overdue pending request to ``expired``; returns those this call expired."""
        expired: list[Verification] = []
        now = self.store.clock()
        for req in await self.pending():
            if req.value["expires_at"] <= now:
                done = await self._expire(req)
                if done is not None:
                    expired.append(done)
        return expired

    # ------------------------------------------------------------- execute
    async def check_executable(self, request_id: Any, tool: str, ctx: ToolContext) -> dict[str, Any] | str:
        """The approved arguments, or why this caller may not run them."""
        req = await self.get(request_id) if isinstance(request_id, str) else None
        if req is None:
            return f"Unknown verification request {request_id!r}."
        if req.value.get("tool") != tool:
            return f"Verification request {req.id} was not opened for tool '{tool}'."
        if req.value["requested_by"] != ctx.principal:
            return f"Verification request {req.id} belongs to another requester."
        if req.state != "approved":
            return _state_message(req)
        args: dict[str, Any] = req.value["args"]
        return args

    async def claim_execution(self, request_id: str, tool: str, ctx: ToolContext) -> dict[str, Any] | str:
        """``approved -> executing`` exactly once; the winner gets the approved arguments."""
        while True:
            checked = await self.check_executable(request_id, tool, ctx)
            if isinstance(checked, str):
                return checked
            req = await self.get(request_id)
            assert req is not None
            value = {k: v for k, v in req.value.items() if k != "id"}
            value.update(state="executing", executing_at=self.store.clock())
            if await self.store.update(COLLECTION, req.id, value, expected_version=req.version) is not None:
                return checked

    async def finish(self, request_id: str, result: ToolResult) -> None:
        """``executing -> executed | failed`` with a short record of the outcome."""
        req = await self.get(request_id)
        if req is None or req.state != "executing":
            return
        value = {k: v for k, v in req.value.items() if k != "id"}
        value.update(
            state="executed" if result.success else "failed", finished_at=self.store.clock(),
            result={"success": result.success, "message": result.message, "error": result.error,
                    "code": result.code},
        )
        await self.store.update(COLLECTION, req.id, value, expected_version=req.version)

    # ------------------------------------------------------------- helpers
    def _check_decider(self, v: dict[str, Any], decider: ToolContext, verb: str) -> None:
        if not decider.principal:
            raise VerificationRefused(f"Only an identified person can {verb} a request.")
        scopes = v["policy"]["approver_scopes"]
        if scopes and not decider.has_any_scope(scopes):
            raise VerificationRefused(
                f"You cannot {verb} this request: it needs one of these scopes: {', '.join(scopes)}."
            )
        if v["policy"]["four_eyes"] and v["requested_by"] == decider.principal:
            raise VerificationRefused(
                f"You cannot {verb} your own request (four-eyes rule): another approver must decide."
            )

    async def _transition(self, request_id: str, change: Callable[[dict[str, Any], float], str]) -> Verification:
        """Read, check, compare-and-set; on a lost race, read again and re-check."""
        while True:
            req = await self.get(request_id)
            if req is None:
                raise VerificationRefused(f"Unknown verification request {request_id!r}.", code="NOT_FOUND")
            now = self.store.clock()
            if req.state == "pending" and req.value["expires_at"] <= now:
                await self._expire(req)
                continue
            if req.state not in OPEN_STATES:
                raise VerificationRefused(_state_message(req), code="CONFLICT")
            value = {k: v for k, v in req.value.items() if k != "id"}
            event = change(value, now)
            rec = await self.store.update(COLLECTION, req.id, value, expected_version=req.version)
            if rec is not None:
                done = Verification(req.id, {"id": req.id, **value}, rec.version)
                await self.dispatcher.dispatch(event, {"event": done})
                return done

    async def _expire(self, req: Verification) -> Verification | None:
        value = {k: v for k, v in req.value.items() if k != "id"}
        value.update(state="expired", decided_at=value["expires_at"], decided_via="timeout")
        rec = await self.store.update(COLLECTION, req.id, value, expected_version=req.version)
        if rec is None:
            return None
        done = Verification(req.id, {"id": req.id, **value}, rec.version)
        await self.dispatcher.dispatch("verification.expired", {"event": done})
        return done


def _state_message(req: Verification) -> str:
    v = req.value
    who = f" by {v['decided_by']}" if v.get("decided_by") else ""
    when = f" at {_iso(v.get('decided_at'))}" if v.get("decided_at") else ""
    messages = {
        "pending": "This request is still waiting for approval.",
        "approved": f"This request was already approved{who}{when}.",
        "rejected": f"This request was already rejected{who}{when}.",
        "cancelled": f"This request was cancelled{who}{when}.",
        "expired": f"This request expired{when}; nothing was done.",
        "executing": "This request was already approved and is running.",
        "executed": "This request was already approved and carried out.",
        "failed": "This request was approved, but running it failed.",
    }
    return messages.get(req.state, f"This request is {req.state}.")


def _jsonable(extra: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in extra.items() if isinstance(v, str | int | float | bool) or v is None}

"""``ApprovalDesk``: the one place approvals are opened, decided, claimed, finished and recovered.

Every path that decides — a button on any surface, a typed command, the ``resolve_verification``
tool, the notebook inbox, the CLI, a confirm-token replay — calls :meth:`ApprovalDesk.decide`.
Each change is one compare-and-set on the record (:meth:`ApprovalDesk._change`, the only CAS loop),
with its effects and its next due time in the same write.

Execution happens exactly once: only the caller whose write moves the record into ``executing``
holds the lease and runs the tool (``Change.claimed``). A lease that ends without a result becomes
``effect_uncertain`` (or, for a tool declared idempotent, is run again).

The desk knows nothing of chats. A chat layer plugs in two things: ``openers`` (add the cards and
the requester's route to a record before it is first written) and a ``follower`` (run what a
decision claimed, deliver what it owes). A decision taken where no follower runs leaves an approved
record ``approved`` and due, for a worker with a follower to pick up.
"""

from __future__ import annotations

import contextlib
import logging
import re
import secrets
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from milpa_chat._failpoints import failpoint
from milpa_chat.runtime._probe import writes_nothing
from milpa_chat.runtime.approval import (
    COLLECTION,
    FINAL,
    MAX_ATTEMPTS,
    Approval,
    ApprovalKind,
    ApprovalRefused,
    card_edits,
    digest,
    due_of,
    effect_key,
    effects_due,
    mark_delivered,
    outcome_text,
    result_record,
    state_message,
)
from milpa_chat.runtime.approval_hooks import (
    ApprovalHooks,
    Change,
    Check,
    Delivery,
    Follower,
    Opener,
    Reminder,
    RunApproved,
    TrailHook,
)
from milpa_chat.runtime.approval_rules import RULES, Actor, Outcome, amend, expire, may_edit, nudge, stale
from milpa_chat.runtime.caps import Cap
from milpa_chat.runtime.events import EventDispatcher
from milpa_chat.runtime.leases import holder_dead, holding, left_by_dead, this_holder
from milpa_chat.store.base import copy_value

if TYPE_CHECKING:
    from milpa_chat.runtime.audit import AuditLogger
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.definition import VerifyPolicy
    from milpa_chat.runtime.result import ToolResult
    from milpa_chat.store.base import Store

__all__ = ["DECISIONS", "ApprovalDesk", "ApprovalHooks", "Change", "Delivery"]

log = logging.getLogger("milpa_chat.approvals")

DECISIONS = ("confirm", "cancel", "approve", "reject", "run_again", "mark_done")
#: How a refused attempt by a model reads ("A model cannot <verb> an approval").
MODEL_VERBS = {
    "confirm": "confirm",
    "cancel": "cancel",
    "approve": "approve",
    "reject": "reject",
    "run_again": "run again",
    "mark_done": "mark as done",
    "edit": "edit",
    "redeem": "redeem",
}
#: Subjects only a standing-grant change (``guard="standing"``) may carry: ``standing:sign``, ``Standing.lift``, ...
_RESERVED = re.compile(r"\s*standing(?:[:._-]|\s*$)", re.IGNORECASE)


#: Settled records an :class:`ApprovalDesk` keeps in memory to refuse taps on their cards without a store read.
SETTLED_KEPT = 256


class ApprovalDesk:
    """Approvals in ``store`` (collection ``approvals``), changed only through compare-and-set.

    ``lease``: seconds a claimed run may take before it counts as lost (renewed while the run lives).
    ``handoff``: seconds the worker that wrote a change has to deliver its effects before any other
    worker may (none when this desk has no follower: nobody here would deliver them).
    ``retention``: seconds a settled record is kept (then the store purges it).
    ``max_pending_per_principal``: how many pending requests one requester may have open at once
    (``None``: no cap); one more is refused with code ``RATE_LIMITED``.

    A lease or a hand-off is held by a process (:func:`~milpa_chat.runtime.leases.this_holder`); one
    whose holder is a dead process on this host is taken over at once (:meth:`recover_dead`).
    """

    def __init__(
        self,
        store: Store,
        *,
        dispatcher: EventDispatcher | None = None,
        lease: float = 30.0,
        handoff: float = 30.0,
        retention: float = 30 * 86400.0,
        max_pending_per_principal: int | None = 100,
        hooks: ApprovalHooks | None = None,
    ) -> None:
        self.store = store
        #: What the desk calls out to (openers, reminders, follower, checker, audit, trail, the runner); plug
        #: more in with :meth:`install`.
        self.hooks = hooks if hooks is not None else ApprovalHooks()
        if dispatcher is not None:
            self.hooks.dispatcher = dispatcher
        self.lease = lease
        self.handoff = handoff
        self.retention = retention
        self.worker = this_holder()
        self.pending_cap = Cap(store, "pending requests", max_pending_per_principal, "max_pending_per_principal")
        #: Whether :meth:`recover_dead` ran (the first sweep runs it).
        self.recovered_dead = False
        #: Settled records this process read or wrote last (at most ``SETTLED_KEPT``): a tap on a decided card
        #: is refused from here without a store read. A settled record's state never changes, so a copy older
        #: than the store's refuses what the store's would; any write still compares and sets in the store.
        self._settled: OrderedDict[str, Approval] = OrderedDict()

    def install(
        self,
        *,
        opener: Opener | None = None,
        reminder: Reminder | None = None,
        follower: Follower | None = None,
        checker: Check | None = None,
        audit: AuditLogger | None = None,
        trail: TrailHook | None = None,
        run: RunApproved | None = None,
    ) -> ApprovalDesk:
        """Plug hooks in after construction (:meth:`ApprovalHooks.install`); returns the desk, for chaining."""
        self.hooks.install(
            opener=opener, reminder=reminder, follower=follower, checker=checker, audit=audit, trail=trail, run=run
        )
        return self

    # The hooks under the names the desk gave them before :class:`ApprovalHooks` (reading is free; setting one
    # is :meth:`install`).
    @property
    def dispatcher(self) -> EventDispatcher:
        return self.hooks.dispatcher

    @property
    def openers(self) -> list[Opener]:
        return self.hooks.openers

    @property
    def reminders(self) -> list[Reminder]:
        return self.hooks.reminders

    @property
    def follower(self) -> Follower | None:
        return self.hooks.follower

    @follower.setter
    def follower(self, follower: Follower | None) -> None:
        self.hooks.follower = follower

    @property
    def checker(self) -> Check | None:
        return self.hooks.checker

    @checker.setter
    def checker(self, checker: Check | None) -> None:
        self.hooks.checker = checker

    @property
    def audit(self) -> AuditLogger | None:
        return self.hooks.audit

    @audit.setter
    def audit(self, audit: AuditLogger | None) -> None:
        self.hooks.audit = audit

    @property
    def trail(self) -> TrailHook | None:
        return self.hooks.trail

    @trail.setter
    def trail(self, trail: TrailHook | None) -> None:
        self.hooks.trail = trail

    # ------------------------------------------------------------------ open
    async def open(
        self,
        kind: ApprovalKind,
        ctx: ToolContext,
        *,
        tool: str | None,
        args: Mapping[str, Any],
        summary: str,
        expires_in: float,
        policy: VerifyPolicy | None = None,
        subject: str | None = None,
        reason: str | None = None,
        payload: Mapping[str, Any] | None = None,
        mutating: bool = True,
        idempotent: bool = False,
        guard: str | None = None,
        external: bool = False,
    ) -> Approval:
        """Store a new pending approval for ``ctx`` (the requester) and return it.

        ``guard``: the record is decided only by a person's surface (a :meth:`decide` that names
        ``via``: a card, the notebook inbox, the CLI), never by a tool — standing-grant changes.
        ``external``: the call is run by the caller that opened the record (an agent of another framework,
        through :meth:`claim` then :meth:`finish`), never by a follower: a confirm or an approval leaves it
        ``approved`` for that caller to claim."""
        from milpa_chat.runtime.definition import VerifyPolicy

        if guard is None and isinstance(subject, str) and _RESERVED.match(subject):
            raise ApprovalRefused(
                f"{subject.strip()!r} names a change of standing grants, which only a person asks for (in chat, the "
                "notebook inbox or milpa-chat grants); name what needs approval another way.",
                code="VALIDATION_ERROR",
            )
        policy = policy or VerifyPolicy()
        now = self.store.clock()
        extra = {k: v for k, v in ctx.extra.items() if isinstance(v, str | int | float | bool) or v is None}
        value: dict[str, Any] = {
            "kind": kind,
            "tool": tool,
            "subject": subject or tool,
            "args": dict(args),
            "digest": digest(args),
            "summary": summary,
            "reason": reason,
            "payload": dict(payload or {}),
            "mutating": mutating,
            "idempotent": idempotent,
            "state": "pending",
            "created_at": now,
            "expires_at": now + expires_in,
            "requester": {
                "principal": ctx.principal,
                "channel": ctx.channel,
                "scopes": list(ctx.scopes),
                "name": str(ctx.extra.get("user_name") or ctx.principal),
                "extra": extra,
            },
            "policy": {
                "approver_scopes": list(policy.approver_scopes),
                "four_eyes": policy.four_eyes,
                "quorum": policy.quorum,
                "remind_at": [now + t for t in policy.remind_after],
                "escalate_at": None if policy.escalate_after is None else now + policy.escalate_after,
                "deliver": policy.deliver,
            },
            "reminded": 0,
            "escalated": False,
            "notices": [],
            "told": 0,
            "votes": [],
            "decided_by": None,
            "decided_by_name": None,
            "decided_at": None,
            "decided_via": None,
            "decision_note": None,
            "attempt": 0,
            "lease": None,
            "result": None,
            "outcome": None,
            "auto_run": False,
            "route": None,
            "cards": [],
            "resume": None,
            "failures": {},
            "deliver_at": now + self._handoff(),
            "writer": self.worker,
        }
        if guard is not None:
            value["guard"] = guard
        for opener in self.hooks.openers:
            opener(value, ctx)
        if external:
            value.update(external=True, auto_run=False)
        who = ctx.principal or "anonymous"
        while True:
            aid = secrets.token_hex(16)  # 128 bits, 32 characters: "run_again:<id>" fits 64 bytes
            await self.pending_cap.take(who, aid, value["expires_at"])
            rec = await self.store.insert(COLLECTION, aid, value, due=due_of(value, now))
            if rec is not None:
                break
            await self.pending_cap.free(who, aid)
        failpoint("approval.opened")
        approval = Approval(aid, value, rec.version, rec.due)
        await self._event(Change(approval, "requested"))
        return approval

    # ------------------------------------------------------------------ read
    async def get(self, approval_id: object) -> Approval | None:
        if not isinstance(approval_id, str) or not approval_id or len(approval_id) > 200:
            return None
        rec = await self.store.get(COLLECTION, approval_id)
        return None if rec is None else Approval(rec.key, rec.value, rec.version, rec.due)

    async def listing(self, *, state: str | None = None) -> list[Approval]:
        """Every stored approval (or those in ``state``), by id."""
        recs = await self.store.scan(COLLECTION, where=None if state is None else {"state": state})
        return [Approval(r.key, r.value, r.version, r.due) for r in recs]

    async def due(self, limit: int = 200) -> list[Approval]:
        """Approvals a worker must look at now (expiry, lease end, a run to start, effects), earliest first."""
        recs = await self.store.due(COLLECTION, before=self.store.clock(), limit=limit)
        return [Approval(r.key, r.value, r.version, r.due) for r in recs]

    # ---------------------------------------------------------------- decide
    async def decide(
        self,
        approval_id: str,
        decision: str,
        ctx: ToolContext,
        *,
        via: str | None = None,
        note: str | None = None,
        follow: bool = True,
        revision: int | None = None,
    ) -> Change:
        """The one decision function. ``ctx`` is the authenticated decider (never button data or arguments).

        Raises :class:`ApprovalRefused` (with a message for the person) when the decision is not
        allowed; nothing changes then, except that an overdue request is expired on the way.
        ``follow=False``: the caller runs what was claimed and delivers the effects itself.
        ``revision``: the version of the arguments the decider saw (a card's); an older one is refused.
        """
        if decision not in DECISIONS:
            raise ApprovalRefused(
                f"Unknown decision {decision!r}; use one of: {', '.join(DECISIONS)}.", code="VALIDATION_ERROR"
            )
        if ctx.by_model:
            await self._refuse_model(approval_id, decision, ctx)
        rule = RULES[decision]
        can_run = self.hooks.follower is not None

        def change(a: Approval, v: dict[str, Any], now: float) -> Outcome:
            if a.state == "pending" and a.expires_at <= now:
                expire(v)
                return "expired", False, state_message(Approval(a.id, v, a.version))
            if a.data.get("guard") and via is None:
                raise ApprovalRefused(
                    f"{a.data.get('summary') or 'This request'}: a person decides it on its card, in the notebook "
                    "inbox or with the milpa-chat command; no tool decides it.",
                    code="FORBIDDEN",
                    approval=a,
                )
            if revision is not None:
                stale(a, revision)
            actor = Actor(ctx, via or ctx.channel, note, now)
            return rule(self, a, v, actor, can_run)

        try:
            done = await self._change(approval_id, change, current=self._settled.get(approval_id))
        except ApprovalRefused as exc:
            self._remember(exc.approval)
            raise
        if done.event == "expired":  # nobody else will deliver what the expiry owes
            await self._follow(done, True)
            raise ApprovalRefused(done.message, code="EXPIRED", approval=done.approval)
        await self._follow(done, follow)
        return done

    async def amend(
        self,
        approval_id: str,
        arguments: Mapping[str, Any],
        ctx: ToolContext,
        *,
        via: str | None = None,
        follow: bool = True,
        check: Check | None = None,
    ) -> Change:
        """Edit a pending approval's arguments before it is decided: the requester of a confirm, or an
        approver of a verification (``ctx``, authenticated). ``arguments`` are the fields to change.

        The new arguments are re-validated and re-authorized as a new call would be (``check``, else
        :attr:`checker`), get a new digest and a new revision (the record keeps every revision, old ->
        new per field); votes so far are reset and an approver who edited becomes the version's author,
        whom four-eyes keeps from approving it. Raises :class:`ApprovalRefused` (``errors`` per field
        when the arguments do not validate) and changes nothing then."""
        if ctx.by_model:
            await self._refuse_model(approval_id, "edit", ctx)
        check = check or self.hooks.checker
        if check is None:
            raise ApprovalRefused(
                "Edits cannot be checked here (no registry is attached to these approvals), so "
                "the request cannot be edited.",
                code="UNAVAILABLE",
            )
        if not isinstance(arguments, Mapping):
            raise ApprovalRefused(
                f"The edited arguments must be an object of fields, got {type(arguments).__name__}.",
                code="VALIDATION_ERROR",
            )
        current = await self.get(approval_id)
        if current is None:
            raise ApprovalRefused(f"Unknown request {approval_id!r} (it may have been removed).", code="NOT_FOUND")
        if current.state == "pending" and current.expires_at > self.store.clock():
            may_edit(current, Actor(ctx, via or ctx.channel, None, self.store.clock()))  # who, before what
        base = str(current.data.get("digest"))
        wire = await check(current, {**current.args, **arguments}) if current.state == "pending" else {}

        def change(a: Approval, v: dict[str, Any], now: float) -> Outcome:
            if a.state == "pending" and a.expires_at <= now:
                expire(v)
                return "expired", False, state_message(Approval(a.id, v, a.version))
            return amend(a, v, Actor(ctx, via or ctx.channel, None, now), wire, base)

        done = await self._change(approval_id, change, current=current)
        if done.event == "expired":
            await self._follow(done, True)
            raise ApprovalRefused(done.message, code="EXPIRED", approval=done.approval)
        await self._follow(done, follow)
        return done

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

    def holding(self, claimed: Approval) -> contextlib.AbstractAsyncContextManager[None]:
        """Keep ``claimed``'s lease alive while the body runs (renewed every third of the lease, from a third
        of the lease on: a short run adds no write), so a long run is never mistaken for a lost one."""
        return holding(self, claimed)

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

    # --------------------------------------------------------------- recover
    async def recover(self, approval: Approval, *, takeover: bool = False) -> Change | None:
        """Do what is due for ``approval``: expire it, end a lost lease, claim an approved run (when a
        follower can run it), or take over its undelivered effects. ``None`` when nothing is due.

        ``takeover``: a lease or a hand-off held by a dead process on this host counts as ended now."""
        can_run = self.hooks.follower is not None

        def change(a: Approval, v: dict[str, Any], now: float) -> Outcome | None:
            if a.state == "pending" and a.expires_at <= now:
                expire(v)
                return "expired", False, ""
            if a.state == "pending":
                nudged = nudge(v, now, self.hooks.reminders)
                if nudged is not None:
                    return nudged, False, ""
            lease = a.data.get("lease")
            if (
                a.state == "executing"
                and lease
                and (float(lease["until"]) <= now or (takeover and holder_dead(lease.get("holder"))))
            ):
                return self._lease_lost(a, v, now, can_run)
            if a.state == "approved" and a.data.get("auto_run") and a.tool is not None and can_run:
                self._claim(v, now)
                return "claimed", True, ""
            if can_run and (
                effects_due(a.data, now)
                or (takeover and holder_dead(a.data.get("writer")) and effects_due({**a.data, "deliver_at": now}, now))
            ):
                return "deliver", False, ""
            return None

        try:
            done = await self._change(approval.id, change)
        except ApprovalRefused:
            return None
        if done.event == "unchanged":
            return None
        await self._event(done)
        return done

    def _lease_lost(self, a: Approval, v: dict[str, Any], now: float, can_run: bool) -> Outcome:
        v["lease"] = None
        if a.data.get("idempotent"):
            v.update(state="approved", retries=int(a.data.get("retries", 0)) + 1)
            return "retrying", self._maybe_claim(v, now, can_run), ""
        v.update(
            state="effect_uncertain",
            outcome="The run did not report back before its lease ended: it may or may not have taken effect.",
        )
        return "uncertain", False, ""

    async def recover_dead(self, limit: int = 5000) -> list[Change]:
        """At start: end at once the leases and hand-offs held by dead processes on this host (a crash, a
        SIGKILL): their runs become ``effect_uncertain`` (an idempotent tool's is run again) and what they
        owed is delivered now, not when the lease or the hand-off would have ended. A live process's leases
        are never taken (:func:`~milpa_chat.runtime.leases.holder_dead`).

        Reads only the due index: records due before the longest lease or hand-off any worker may have
        written (``max(lease, handoff, 300)`` seconds from now), at most ``limit``. A sweep runs it until
        it once succeeds (the database may be away at start)."""
        horizon = self.store.clock() + max(self.lease, self.handoff, 300.0)
        changes = []
        for approval in await left_by_dead(self.store, COLLECTION, horizon, limit):
            change = await self.recover(approval, takeover=True)
            if change is not None:
                changes.append(change)
        self.recovered_dead = True
        if changes:
            log.warning(
                "took over %d approval(s) a dead process on this host left running or undelivered", len(changes)
            )
        return changes

    async def sweep(self, limit: int = 200) -> list[Change]:
        """Recover every due approval (without a follower: expiries and lost leases only); the first
        sweep of a desk also takes over what dead processes left (:meth:`recover_dead`)."""
        changes = []
        for change in [] if self.recovered_dead else await self.recover_dead():
            if self.hooks.follower is not None:
                await self.hooks.follower(change)
            changes.append(change)
        for approval in await self.due(limit):
            found = await self.recover(approval)
            if found is not None:
                if self.hooks.follower is not None:
                    await self.hooks.follower(found)
                changes.append(found)
        return changes

    # -------------------------------------------------------------- delivery
    async def delivered(
        self, approval_id: str, outcomes: Mapping[str, Delivery], *, current: Approval | None = None
    ) -> Approval:
        """Record what a deliverer did with the effects it was given (one write for all of them)."""

        def change(a: Approval, v: dict[str, Any], now: float) -> Outcome | None:
            if not outcomes:
                return None
            failures = v.setdefault("failures", {})
            for effect, out in outcomes.items():
                if out.ok:
                    failures.pop(effect, None)
                    # an edit of a card another deliverer also edited (and recorded) meanwhile may have
                    # reached the platform before or after theirs: the card is edited again
                    raced = (
                        current is not None
                        and not out.message_id
                        and card_edits(a.data, effect) != card_edits(current.data, effect)
                    )
                    mark_delivered(v, effect, out.key, out.message_id, raced=raced)
                    continue
                failure = failures.setdefault(effect, {"attempts": 0})
                failure.update(
                    attempts=failure["attempts"] + 1,
                    error=(out.error or "")[:300],
                    next_at=now + max(out.retry_in, 0.0),
                    **{"for": effect_key(v, effect)},
                )
                if failure["attempts"] >= MAX_ATTEMPTS:
                    log.error(
                        "approval %s: giving up %s after %d attempts: %s", a.id, effect, failure["attempts"], out.error
                    )
                    failures.pop(effect)
                    mark_delivered(v, effect, effect_key(v, effect))
                    if effect != "trouble":
                        v.setdefault("troubles", []).append(f"{effect}: {(out.error or '')[:200]}")
            return "delivered", False, ""

        # What a card already shows and that a report or notice went out are re-derived from the record:
        # a mark lost to a power cut only has the sweeper edit the card again (the same content) or send the
        # report once more, as after a crash between the send and this write. So the write waits for no disk,
        # unless it records the id of a card just sent (losing that would leave a copy nobody edits) or that
        # a paused agent run was resumed (it would be resumed twice).
        durable = "resume" in outcomes or any(out.message_id for out in outcomes.values())
        return (await self._change(approval_id, change, handoff=False, current=current, durable=durable)).approval

    async def _refuse_model(self, approval_id: object, attempt: str, ctx: ToolContext) -> None:
        """Deciding is for people: a model-made ``ctx`` is refused before the record is read, and the
        attempt is audited (the log line and, when a trail is attached, an entry of its own)."""
        shown = approval_id if isinstance(approval_id, str) and len(approval_id) <= 200 else repr(approval_id)[:80]
        log.warning("approval %s: %s by a model for %s refused", shown, attempt, ctx.principal)
        if self.hooks.audit is not None:
            self.hooks.audit.approval("model_refused", str(shown), None, attempt, ctx.principal, ctx.channel)
        if self.hooks.trail is not None:
            try:
                await self.hooks.trail.append(
                    "refused",
                    str(shown),
                    {"attempt": attempt, "principal": ctx.principal, "channel": ctx.channel, "by_model": True},
                )
            except Exception:
                log.exception("approval %s: the audit trail could not record a refused attempt", shown)
        raise ApprovalRefused(
            f"A model cannot {MODEL_VERBS.get(attempt, attempt)} an approval: only a person decides it, on its "
            "card, in the notebook inbox or with the milpa-chat command. Nothing was changed.",
            code="FORBIDDEN",
        )

    # ---------------------------------------------------------------- helpers
    def _handoff(self) -> float:
        """Seconds this worker keeps the effects of its writes to itself: none without a follower (a decision in
        the CLI, an MCP server, a notebook), so a worker that can run and deliver them does so at once."""
        return self.handoff if self.hooks.follower is not None else 0.0

    def _claim(self, v: dict[str, Any], now: float) -> None:
        attempt = int(v.get("attempt", 0)) + 1
        v.update(
            state="executing",
            attempt=attempt,
            lease={"holder": self.worker, "until": now + self.lease, "attempt": attempt},
        )

    def _maybe_claim(self, v: dict[str, Any], now: float, can_run: bool) -> bool:
        if v.get("tool") is not None and v.get("auto_run") and can_run:
            self._claim(v, now)
            return True
        return False

    async def _change(
        self,
        approval_id: str,
        fn: Callable[[Approval, dict[str, Any], float], Outcome | None],
        *,
        handoff: bool = True,
        current: Approval | None = None,
        durable: bool = True,
    ) -> Change:
        """The one compare-and-set loop: read, apply ``fn`` to a copy, write at the version read; on a
        lost race read again and re-apply (``fn`` re-checks everything). ``fn`` returning ``None``
        writes nothing. ``current``: a snapshot the caller just got from a write of its own, tried
        first without reading (a stale one only costs the lost race). ``durable=False``: the write may be
        lost on a power cut (:mod:`milpa_chat.store.base`), for bookkeeping the sweeper re-derives."""
        while True:
            if current is None or current.id != approval_id:
                current = await self.get(approval_id)
            if current is None:
                raise ApprovalRefused(f"Unknown request {approval_id!r} (it may have been removed).", code="NOT_FOUND")
            now = self.store.clock()
            if writes_nothing(fn, current, now):  # a refusal, or nothing to write, needs no copy of the record
                return Change(current, "unchanged")
            value = copy_value(current.data)
            outcome = fn(current, value, now)
            if outcome is None:
                return Change(current, "unchanged")
            if handoff:
                value.update(deliver_at=now + self._handoff(), writer=self.worker)
            settled = value["state"] in FINAL and current.state not in FINAL
            rec = await self.store.update(
                COLLECTION,
                current.id,
                value,
                expected_version=current.version,
                due=due_of(value, now),
                ttl=self.retention if settled else None,
                durable=durable,
            )
            if rec is not None:
                event, claimed, message = outcome
                written = Approval(current.id, value, rec.version, rec.due)
                self._remember(written)
                if current.state == "pending" and written.state != "pending":  # decided or expired: a slot frees
                    await self.pending_cap.free(written.requester_principal or "anonymous", written.id)
                return Change(written, event, claimed, message)
            current = None

    def settled(self, approval_id: str) -> Approval | None:
        """The settled record this process last read or wrote for ``approval_id``, if it still keeps one (its
        state is final; its deliveries may have moved on elsewhere: a write compares and sets)."""
        return self._settled.get(approval_id)

    def _remember(self, approval: Approval | None) -> None:
        """Keep a settled record (the most recent ``SETTLED_KEPT``) for refusing taps on its cards."""
        if approval is None or approval.state not in FINAL:
            return
        self._settled[approval.id] = approval
        self._settled.move_to_end(approval.id)
        if len(self._settled) > SETTLED_KEPT:
            self._settled.popitem(last=False)

    async def _follow(self, change: Change, follow: bool) -> None:
        await self._event(change)
        if follow and self.hooks.follower is not None and change.event not in ("unchanged", "delivered"):
            await self.hooks.follower(change)

    async def _event(self, change: Change) -> None:
        a = change.approval
        if self.hooks.audit is not None and change.event not in (
            "unchanged",
            "delivered",
            "resume_set",
            "deliver",
            "renewed",
        ):
            by = a.data.get("rescued_by") if change.event in ("run_again", "marked_done") else a.data.get("decided_by")
            self.hooks.audit.approval(change.event, a.id, a.label, a.state, by, a.data.get("decided_via"))
        if self.hooks.trail is not None:
            try:
                await self.hooks.trail.record(change)
            except Exception:  # the change itself stands; a gap in the trail is what verify reports
                log.exception("approval %s: the audit trail could not record %s", a.id, change.event)
        name = _EVENTS.get(change.event)
        if a.kind == "verification" and name and self.hooks.dispatcher.has_listeners(f"verification.{name}"):
            await self.hooks.dispatcher.dispatch(f"verification.{name}", {"event": a})


_EVENTS = {
    "requested": "requested",
    "voted": "grant_recorded",
    "approved": "granted",
    "rejected": "rejected",
    "cancelled": "cancelled",
    "expired": "expired",
}

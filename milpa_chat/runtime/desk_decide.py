"""Deciding an approval: the one decision function, edits before a decision, and the refusal of a model."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from milpa_chat.runtime.approval import (
    Approval,
    ApprovalRefused,
    state_message,
)
from milpa_chat.runtime.approval_hooks import (
    Change,
    Check,
)
from milpa_chat.runtime.approval_rules import RULES, Actor, Outcome, amend, expire, may_edit, stale

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext

from milpa_chat.runtime.desk_core import DeskCore

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


class Deciding(DeskCore):
    """Decides and edits pending approvals; deciding is for people."""

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
            settled = self._settled.get(approval_id)
            live = self._live.get(approval_id) if settled is None else None  # see DeskCore._live
            done = await self._change(approval_id, change, current=settled or live, remembered=live is not None)
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

    async def annotate(
        self,
        approval_id: str,
        fn: Callable[[Approval, dict[str, Any], float], Outcome | None],
        *,
        follow: bool = True,
    ) -> Change:
        """A change that decides nothing (a batch, a reassignment, a question, an answer, a comment):
        ``fn`` checks the record and writes a copy, as a decision rule does, inside the one compare-and-set
        loop (it may raise :class:`ApprovalRefused`). The follower delivers what the record then owes."""
        done = await self._change(approval_id, fn)
        await self._follow(done, follow)
        return done

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
        verb = MODEL_VERBS.get(attempt, attempt.replace("_", " "))
        raise ApprovalRefused(
            f"A model cannot {verb} an approval: only a person decides it, on its "
            "card, in the notebook inbox or with the milpa-chat command. Nothing was changed.",
            code="FORBIDDEN",
        )

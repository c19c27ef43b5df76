"""After the decision: what a worker does for due approvals (expiry, lost leases, runs to start, reminders),
taking over what dead processes left, and recording what its deliverers delivered."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from milpa_chat.runtime.approval import (
    COLLECTION,
    MAX_ATTEMPTS,
    Approval,
    ApprovalRefused,
    card_edits,
    effect_key,
    effects_due,
    mark_delivered,
)
from milpa_chat.runtime.approval_hooks import (
    Change,
    Delivery,
)
from milpa_chat.runtime.approval_rules import Outcome, expire, nudge
from milpa_chat.runtime.desk_core import DeskCore
from milpa_chat.runtime.leases import holder_dead, left_by_dead

log = logging.getLogger("milpa_chat.approvals")


class Recovering(DeskCore):
    """Recovers due approvals and records deliveries."""

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

    async def delivered(
        self, approval_id: str, outcomes: Mapping[str, Delivery], *, current: Approval | None = None
    ) -> Approval:
        """Record what a deliverer did with the effects it was given (one write for all of them)."""

        def change(a: Approval, v: dict[str, Any], now: float) -> Outcome | None:
            if not outcomes:
                return None
            # the failures are copied (and written) only when one is recorded or cleared
            held = dict.get(v, "failures") or {}
            failures = (
                v.setdefault("failures", {})
                if any(not out.ok or effect in held for effect, out in outcomes.items())
                else {}
            )
            for effect, out in outcomes.items():
                if out.ok:
                    failures.pop(effect, None)
                    # an edit of a card another deliverer also edited (and recorded) meanwhile may have
                    # reached the platform before or after theirs: the card is edited again
                    raced = (
                        current is not None
                        and a is not current  # (the snapshot itself, as stored: nobody edited it since)
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

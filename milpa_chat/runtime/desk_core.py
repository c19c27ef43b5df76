"""The core of an :class:`~milpa_chat.runtime.ApprovalDesk`: its hooks, reading records, and the one
compare-and-set loop every change goes through (with the events and the follower it calls after a write)."""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self

from milpa_chat.runtime._probe import Draft
from milpa_chat.runtime.approval import (
    COLLECTION,
    FINAL,
    Approval,
    ApprovalRefused,
    as_written,
    due_of,
    hold_new_cards,
    pending_effects,
    unsent_cards,
)
from milpa_chat.runtime.approval_hooks import (
    ApprovalHooks,
    Change,
    Check,
    Follower,
    Opener,
    Reminder,
    RunApproved,
    TrailHook,
)
from milpa_chat.runtime.approval_rules import Outcome
from milpa_chat.runtime.caps import Cap
from milpa_chat.runtime.events import EventDispatcher
from milpa_chat.runtime.leases import this_holder
from milpa_chat.store.base import Encoded, encode_parts

if TYPE_CHECKING:
    from milpa_chat.runtime.audit import AuditLogger
    from milpa_chat.store.base import Record, Store


log = logging.getLogger("milpa_chat.approvals")

#: Settled records an :class:`ApprovalDesk` keeps in memory to refuse taps on their cards without a store read.
SETTLED_KEPT = 256


class DeskCore:
    """Approvals in ``store`` (collection ``approvals``), changed only through :meth:`_change`."""

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
        # The live (not yet settled) records this process last wrote: a decision tries its compare-and-set on
        # one without reading first; on a lost race, or when the snapshot would refuse, it reads the record.
        self._live: OrderedDict[str, Approval] = OrderedDict()

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
    ) -> Self:
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

    async def get(self, approval_id: object) -> Approval | None:
        if not isinstance(approval_id, str) or not approval_id or len(approval_id) > 200:
            return None
        rec = await self.store.get(COLLECTION, approval_id)
        return None if rec is None else self._as_read(rec)

    def _as_read(self, rec: Record) -> Approval:
        """The approval ``rec`` holds: the record this process keeps of that very version when it has one
        (approval ids are random and never reused, so one version of one id is one content), whose JSON is
        then not decoded again (and whose next write re-encodes only what it changes)."""
        kept = self._live.get(rec.key) or self._settled.get(rec.key)
        if kept is not None and kept.version == rec.version:
            return kept
        return Approval(rec.key, rec.value, rec.version, rec.due)

    async def listing(self, *, state: str | None = None) -> list[Approval]:
        """Every stored approval (or those in ``state``), by id."""
        recs = await self.store.scan(COLLECTION, where=None if state is None else {"state": state})
        return [self._as_read(r) for r in recs]

    async def due(self, limit: int = 200) -> list[Approval]:
        """Approvals a worker must look at now (expiry, lease end, a run to start, effects), earliest first."""
        recs = await self.store.due(COLLECTION, before=self.store.clock(), limit=limit)
        return [self._as_read(r) for r in recs]

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
        remembered: bool = False,
    ) -> Change:
        """The one compare-and-set loop: read, apply ``fn`` to a copy (a :class:`~milpa_chat.runtime._probe.Draft`:
        copied as far as ``fn`` reads it), write at the version read; on a
        lost race read again and re-apply (``fn`` re-checks everything). ``fn`` returning ``None``
        writes nothing. ``current``: a snapshot the caller just got from a write of its own, tried
        first without reading (a stale one only costs the lost race). ``durable=False``: the write may be
        lost on a power cut (:mod:`milpa_chat.store.base`), for bookkeeping the sweeper re-derives.
        ``remembered``: ``current`` is a live record this process wrote earlier (it may be stale): a refusal or
        nothing to write on it is only given after reading the record."""
        while True:
            if current is None or current.id != approval_id:
                current = await self.get(approval_id)
                remembered = False
            if current is None:
                raise ApprovalRefused(f"Unknown request {approval_id!r} (it may have been removed).", code="NOT_FOUND")
            now = self.store.clock()
            draft = Draft(current.data)  # a refusal, or nothing to write, costs one shallow copy
            try:
                outcome = fn(current, draft, now)
            except ApprovalRefused:
                if remembered:  # refused on a snapshot: refuse on what is stored
                    current, remembered = await self._as_stored(approval_id, current), False
                    continue
                raise
            if outcome is None:
                if remembered:
                    current, remembered = await self._as_stored(approval_id, current), False
                    continue
                return Change(current, "unchanged")
            if handoff:
                until = now + self._handoff()
                dict.update(draft, deliver_at=until, writer=self.worker)
                if unsent_cards(dict.get(draft, "cards")):  # cards a reminder or escalation added
                    hold_new_cards(draft, self.worker, until)
            value = draft.plain()
            was = current.data["state"]  # (the fields read directly: this loop runs on every write)
            settled = value["state"] in FINAL and was not in FINAL
            effects = pending_effects(value)
            text, parts = encode_parts(COLLECTION, current.id, value, current.data, current._parts)
            rec = await self.store.update(
                COLLECTION,
                current.id,
                Encoded(value, text),
                expected_version=current.version,
                due=due_of(value, now, effects),
                ttl=self.retention if settled else None,
                durable=durable,
            )
            if rec is not None:
                event, claimed, message = outcome
                written = as_written(current.id, value, rec.version, rec.due, effects, parts)
                self._remember(written)
                if was == "pending" and value["state"] != "pending":  # decided or expired: a slot frees
                    await self.pending_cap.free(written.requester_principal or "anonymous", written.id)
                return Change(written, event, claimed, message)
            current = None

    async def _as_stored(self, approval_id: str, snapshot: Approval | None) -> Approval | None:
        """The record as stored; the remembered ``snapshot`` itself when the store still holds that version
        (approval ids are random and never reused, so one version of one id is one content): its JSON is
        not decoded again."""
        rec = await self.store.get(COLLECTION, approval_id)
        if rec is None:
            return None
        if snapshot is not None and snapshot.id == rec.key and snapshot.version == rec.version:
            return snapshot
        return self._as_read(rec)

    def settled(self, approval_id: str) -> Approval | None:
        """The settled record this process last read or wrote for ``approval_id``, if it still keeps one (its
        state is final; its deliveries may have moved on elsewhere: a write compares and sets)."""
        return self._settled.get(approval_id)

    def _remember(self, approval: Approval | None) -> None:
        """Keep a settled record (the most recent ``SETTLED_KEPT``) for refusing taps on its cards, and a live
        one (as many) for deciding it without reading it first."""
        if approval is None:
            return
        if approval.data["state"] not in FINAL:
            self._live[approval.id] = approval
            self._live.move_to_end(approval.id)
            if len(self._live) > SETTLED_KEPT:
                self._live.popitem(last=False)
            return
        self._live.pop(approval.id, None)
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
        if name and a.data["kind"] == "verification" and self.hooks.dispatcher.has_listeners(f"verification.{name}"):
            await self.hooks.dispatcher.dispatch(f"verification.{name}", {"event": a})


_EVENTS = {
    "requested": "requested",
    "voted": "grant_recorded",
    "approved": "granted",
    "rejected": "rejected",
    "cancelled": "cancelled",
    "expired": "expired",
}

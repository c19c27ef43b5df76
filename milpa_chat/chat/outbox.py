"""``ApprovalOutbox``: delivers what an approval owes its surfaces, then records it in one write.

What is owed is derived from the record (:func:`milpa_chat.runtime.approval.pending_effects`): each
card whose shown state is behind (send it the first time, edit it after), the report to the
requester (the result through the assistant's one result path, or a notice), a trouble notice, and
the agent run waiting to resume. A platform error never touches the state: it is recorded with a
retry time (the platform's ``retry_after`` when it gives one), and whichever worker is alive when
that time comes delivers again; after several attempts the requester is told.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from milpa_chat._failpoints import failpoint
from milpa_chat.chat import cards
from milpa_chat.chat.inbound import Inbound, MessageRef
from milpa_chat.chat.surface import Transport
from milpa_chat.renderers.model import Actions, Button, Message
from milpa_chat.runtime.approval import active_failure, card_key, report_key
from milpa_chat.runtime.approvals import Delivery
from milpa_chat.runtime.leases import holder_dead
from milpa_chat.runtime.result import ToolResult

if TYPE_CHECKING:
    from milpa_chat.runtime.approval import Approval
    from milpa_chat.runtime.approvals import ApprovalDesk

__all__ = ["ApprovalOutbox", "retry_delay"]

log = logging.getLogger("milpa_chat.chat")

#: States whose card differs by role (the buttons a copy offers); every other state's copies say the same.
ROLE_STATES = frozenset({"pending", "effect_uncertain"})

#: ``present(transport, chat_id, approval, result)``: post a result where the request came from.
Presenter = Callable[[Transport, str, "Approval", "ToolResult"], Awaitable[Any]]
#: ``resume(approval, result)``: hand a settled approval back to the agent run waiting on it.
Resumer = Callable[["Approval", "ToolResult | None"], Awaitable[None]]


def retry_delay(exc: BaseException, attempts: int) -> float:
    """Seconds before trying again: what the platform asked for (Telegram ``retry_after``, Slack's
    ``Retry-After`` header), else exponential back-off from 1 s to 5 min."""
    wait: Any = getattr(exc, "retry_after", None)
    if wait is None:
        headers = getattr(getattr(exc, "response", None), "headers", None) or {}
        wait = headers.get("Retry-After") or headers.get("retry-after") if hasattr(headers, "get") else None
    if isinstance(wait, timedelta):
        wait = wait.total_seconds()
    try:
        seconds = float(wait)
    except (TypeError, ValueError):
        seconds = math.nan
    if math.isfinite(seconds) and seconds >= 0:
        return min(seconds, 3600.0)
    return float(min(300, 2 ** max(0, attempts)))


class ApprovalOutbox:
    """Delivers approvals' effects through ``transports`` (surface name -> transport)."""

    def __init__(
        self, desk: ApprovalDesk, transports: Mapping[str, Transport], *, present: Presenter, resume: Resumer
    ) -> None:
        self.desk = desk
        self.transports = transports
        self.present = present
        self.resume = resume
        #: Called for each copy of a card with ``(approval, role)``; a button returned is added to that copy
        #: (e.g. "Always allow…" on an approver's copy, from :class:`milpa_chat.grants.GrantChat`).
        self.extras: list[Callable[[Approval, str], Button | None]] = []
        #: ``(approval id, card effect)`` of the cards whose first send is in flight in this process.
        self._sending: set[tuple[str, str]] = set()
        #: The last card drawn for every role alike: ``((approval id, version, ""), message)``.
        self._drawn: tuple[tuple[str, int, str], Message] | None = None

    def card(self, approval: Approval, role: str, *, failing: Mapping[str, str] | None = None) -> Message:
        """This copy of the card (:func:`cards.approval_message`), with the buttons :attr:`extras` add.

        Once decided (and unless its outcome is uncertain) every copy of a card says the same, whatever its
        role: the card drawn for one copy is the next copy's too (one version of one approval id is one
        content)."""
        same = approval.state not in ROLE_STATES
        key = (approval.id, approval.version, "" if same else role)
        drawn = self._drawn
        if same and drawn is not None and drawn[0] == key:
            message = drawn[1]
        else:
            message = cards.approval_message(approval, role, failing=failing)
            self._drawn = (key, message) if same else None
        extra = [b for b in (make(approval, role) for make in self.extras) if b is not None]
        if not extra:
            return message
        return dataclasses.replace(message, blocks=(*message.blocks, Actions.row(*extra)))

    @staticmethod
    def knows(approval: Approval, inbound: Inbound) -> bool:
        """Whether the tapped message is a card the record knows (or there is no message to know)."""
        if not inbound.message_id:
            return True
        return any(
            c["surface"] == inbound.surface
            and str(c["chat_id"]) == inbound.chat_id
            and str(c.get("message_id")) == inbound.message_id
            for c in approval.data.get("cards", [])
        )

    async def repair(self, approval: Approval, inbound: Inbound) -> None:
        """Bring the tapped message up to date when the record does not know it: a copy of the card
        whose send completed but whose id a crash lost. Best effort; only once the approval was decided.

        A copy is only ever repaired from its own record: only when the platform reported the tapped
        message's buttons and one of them names ``approval`` (a tap naming another request, or on a
        message whose buttons could not be seen, changes no message)."""
        if approval.state == "pending" or self.knows(approval, inbound) or inbound.message_id is None:
            return
        if not inbound.offered or not inbound.shows(approval.id):
            log.info(
                "approval %s: a tap on %s message %s is not from a copy of its card; not repaired",
                approval.id,
                inbound.surface,
                inbound.message_id,
            )
            return
        transport = self.transports.get(inbound.surface)
        if transport is None:
            return
        role = "approver" if approval.state == "effect_uncertain" else "viewer"
        try:
            await transport.edit(
                MessageRef(inbound.surface, inbound.chat_id, inbound.message_id), self.card(approval, role)
            )
        except Exception as exc:
            log.info("approval %s: could not update an unrecorded copy of its card (%s)", approval.id, exc)

    async def deliver(self, approval: Approval, *, again: bool = True) -> Approval:
        """Deliver every effect that is due here, then record the outcomes (one write). Never raises
        for a platform error. A card whose edit raced another worker's recorded edit of it is edited
        once more at once (``again``), from the record as it is then."""
        now = self.desk.store.clock()
        outcomes: dict[str, Delivery] = {}
        failing: dict[str, str] = {}  # this pass's errors, for the requester's card sent after them
        sending: set[tuple[str, str]] = set()  # the first sends of cards this pass makes (until their ids are kept)
        held = approval.data.get("failures")  # (none held back: no effect has a failure to look up)
        try:
            for effect in approval.effects():
                failure = active_failure(approval.data, effect) if held else None
                if failure and float(failure["next_at"]) > now:
                    continue  # waiting out a retry time
                if self._sent_elsewhere(approval, effect, now):
                    continue  # its first send is in flight: the sender edits it once its id is kept
                if effect.startswith("card:") and not approval.data["cards"][int(effect[5:])].get("message_id"):
                    sending.add((approval.id, effect))
                    self._sending.add((approval.id, effect))
                try:
                    done = await self._one(approval, effect, failing)
                except Exception as exc:
                    attempts = int(failure["attempts"]) + 1 if failure else 1
                    log.warning("approval %s: %s failed (attempt %d): %s", approval.id, effect, attempts, exc)
                    done = Delivery(error=f"{type(exc).__name__}: {exc}", retry_in=retry_delay(exc, attempts))
                    failing[effect] = done.error or ""
                if done is not None:
                    outcomes[effect] = done
            if not outcomes:
                return approval
            before = approval.kind == "verification" and bool(cards.unreached(approval))  # (what _retell reads)
            delivered = await self.desk.delivered(approval.id, outcomes, current=approval)
        finally:
            self._sending.difference_update(sending)
        delivered = await self._retell(delivered, before, sent={e for e, d in outcomes.items() if d.message_id})
        still = delivered.effects()
        raced = [e for e, d in outcomes.items() if e.startswith("card:") and d.ok and not d.message_id and e in still]
        # a card sent showing a state the record has since left (a decision landed during its send): nobody
        # else could edit it before its id was kept, so it is edited now
        overtaken = [e for e, d in outcomes.items() if d.message_id and e in still]
        if again and (overtaken or (raced and delivered.state == approval.state)):
            return await self.deliver(delivered, again=False)
        return delivered

    def _sent_elsewhere(self, approval: Approval, effect: str, now: float) -> bool:
        """Whether the first send of this card is someone else's: in flight in this process, or held by another
        live worker that opened it and has not yet kept its message id (until its hold ends)."""
        if not effect.startswith("card:"):
            return False
        card = approval.data["cards"][int(effect[5:])]
        if card.get("message_id"):
            return False
        if (approval.id, effect) in self._sending:
            return True
        hold = card.get("sending")
        if not hold or hold.get("by") == self.desk.worker or float(hold.get("until", 0)) <= now:
            return False
        return not holder_dead(hold.get("by"))

    async def _retell(self, approval: Approval, before: bool, sent: set[str]) -> Approval:
        """When whether an approver has the card changed, the requester's copy says so: "No approver
        could be reached yet", then "Waiting for an approver". Recorded like any edit of the card (so an
        edit by another worker at the same time is detected and the card edited again)."""
        if approval.kind != "verification" or approval.state != "pending" or bool(cards.unreached(approval)) == before:
            return approval
        outcomes: dict[str, Delivery] = {}
        for i, card in enumerate(approval.data.get("cards", [])):
            transport = self.transports.get(card["surface"])
            if card.get("role") != "requester" or not card.get("message_id") or f"card:{i}" in sent or not transport:
                continue
            try:
                await transport.edit(
                    MessageRef(card["surface"], str(card["chat_id"]), str(card["message_id"])),
                    self.card(approval, "requester"),
                )
            except Exception as exc:
                log.info("approval %s: the requester's card not updated yet (%s)", approval.id, exc)
                continue
            outcomes[f"card:{i}"] = Delivery(key=card_key(approval.data))
        if not outcomes:
            return approval
        return await self.desk.delivered(approval.id, outcomes, current=approval)

    async def _shown(self, approval: Approval, card: dict[str, Any]) -> None:
        trail = self.desk.hooks.trail
        if trail is not None:
            try:
                await trail.shown(approval.id, card, approval.state, approval.data.get("digest"))
            except Exception:
                log.exception("approval %s: the audit trail could not record a card", approval.id)

    async def _one(self, approval: Approval, effect: str, failing: Mapping[str, str]) -> Delivery | None:
        """Deliver one effect; ``None`` when it cannot be delivered from this worker (surface not attached)."""
        v = approval.data
        if effect.startswith("card:"):
            card = v["cards"][int(effect.partition(":")[2])]
            transport = self.transports.get(card["surface"])
            if transport is None:
                return None
            message = self.card(approval, card.get("role", "approver"), failing=failing)
            if card.get("message_id"):
                await transport.edit(
                    MessageRef(card["surface"], str(card["chat_id"]), str(card["message_id"])), message
                )
                await self._shown(approval, card)
                return Delivery(key=card_key(v))
            ref = await transport.send(str(card["chat_id"]), message)
            failpoint("card.sent")
            await self._shown(approval, card)
            return Delivery(key=card_key(v), message_id=ref.message_id)
        route = approval.route
        if effect == "resume":
            await self.resume(approval, _result(approval))
            return Delivery()
        transport = self.transports.get(route["surface"]) if route else None
        if transport is None or route is None:
            return None
        if effect == "notice":
            for text in v.get("notices", [])[int(v.get("told", 0)) :]:
                await transport.send(route["chat_id"], cards.text(text))
            return Delivery(key=str(len(v.get("notices", []))))
        if effect == "trouble":
            troubles = "; ".join(v.get("troubles", []))
            await transport.send(
                route["chat_id"],
                cards.text(
                    f"I could not update everything about your request to run {approval.label} ({troubles}). "
                    "Its state is kept; ask an administrator to check the bot's connection.",
                    tone="warning",
                ),
            )
            return Delivery()
        result = _result(approval)
        if result is not None:
            await self.present(transport, route["chat_id"], approval, result)
        else:
            await transport.send(route["chat_id"], cards.text(_notice(approval)))
        failpoint("report.sent")
        return Delivery(key=report_key(v))


def _result(approval: Approval) -> ToolResult | None:
    stored = approval.data.get("result")
    if approval.state in ("executed", "failed") and stored:
        return ToolResult.from_dict(stored)
    if approval.state == "executed" and approval.data.get("rescued_by"):
        return ToolResult.success(None, approval.data.get("outcome") or "Marked as done.")
    return None


def _notice(approval: Approval) -> str:
    v = approval.data
    label = approval.label
    who = v.get("decided_by_name") or v.get("decided_by") or "an approver"
    note = f" ({v['decision_note']})" if v.get("decision_note") else ""
    if approval.state == "rejected":
        return f"Your request to run {label} was rejected by {who}{note}. Nothing was done."
    if approval.state == "expired":
        return f"Your request to run {label} expired; nothing was done."
    if approval.state == "effect_uncertain":
        return (
            f"Your request to run {label} was approved, but its run did not report back: it may or may not "
            "have taken effect. Check, then choose Run again or Mark as done on the card."
        )
    if approval.state == "approved":
        return f"Your request “{label}” was approved by {who}{note}."
    return f"Your request to run {label} is {approval.state}."

"""Approval flows behind the buttons: taps become decisions, claimed runs run, effects are delivered.

Rules:

* who acts is the platform identity of whoever tapped (``Inbound.user``), never the button data;
* every decision is :meth:`ApprovalDesk.decide` — the same function the ``resolve_verification``
  tool, the notebook inbox and the CLI call — so the rules are checked once, in one place;
* the tap is answered at once, before its run starts; a platform failure there holds the run back at most
  ``answer_grace`` seconds;
* the tool runs once, with the approved arguments, as the requester, by whoever claimed it;
* every copy of the card converges on the record's state through :class:`ApprovalOutbox`.

The flows see narrow collaborators — the desk, the outbox, how to run a claimed approval and how to
map an inbound event to a context — never the whole assistant.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from milpa_chat._failpoints import failpoint
from milpa_chat.chat.cards import VERSIONED, parse_ref
from milpa_chat.runtime._alarms import alarms
from milpa_chat.runtime.approval import ApprovalRefused

if TYPE_CHECKING:
    from milpa_chat.chat.inbound import Inbound
    from milpa_chat.chat.outbox import ApprovalOutbox
    from milpa_chat.chat.surface import Transport
    from milpa_chat.runtime.approval import Approval
    from milpa_chat.runtime.approvals import ApprovalDesk, Change
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.result import ToolResult

__all__ = ["ACTIONS", "ApprovalFlows"]

log = logging.getLogger("milpa_chat.chat")

#: Button action -> decision of :meth:`ApprovalDesk.decide`.
ACTIONS = {
    "confirm": "confirm",
    "cancel": "cancel",
    "approve": "approve",
    "reject": "reject",
    "run_again": "run_again",
    "mark_done": "mark_done",
}
NOT_VALID = "This button is not valid (unknown or removed request)."
#: A tap whose data is not among the buttons of the message it was made on (a modified client).
NOT_THIS_MESSAGE = "This button does not belong to this message."
#: A decision a card of the request does not offer to the one who tapped it (a modified client sent it).
NOT_ON_THIS_CARD = "This card has no such button for you: nothing was decided."
NOT_ANY_MORE = "This button is not valid any more."
#: Short answers for a tap on an approval that was already decided (a callback answer shows 200 characters).
STATE_ANSWERS = {
    "approved": "Already approved.",
    "executing": "Already approved and running.",
    "executed": "Already done.",
    "failed": "Already approved; running it failed.",
    "rejected": "Already rejected.",
    "cancelled": "Already cancelled.",
    "expired": "This request expired; nothing was done.",
    "effect_uncertain": "Approved, but the run did not report back: choose Run again or Mark as done.",
}


class ApprovalFlows:
    """Decisions from taps, runs of what they claim, and recovery of what is due."""

    def __init__(
        self,
        desk: ApprovalDesk,
        outbox: ApprovalOutbox,
        *,
        run: Callable[[Approval], Awaitable[ToolResult]],
        context_for: Callable[[Inbound], ToolContext],
    ) -> None:
        self.desk = desk
        self.outbox = outbox
        self.run = run
        self.context_for = context_for
        #: Seconds a claimed run may take before its cards are edited to "Running" (a fast run goes
        #: straight to "Done": one platform call less per tap).
        self.show_running_after = 0.5
        #: Seconds a confirmed run waits for the tap's answer to be sent before it starts anyway (a platform
        #: that fails or throttles answers never holds a run back longer).
        self.answer_grace = 0.5

    async def on_tap(
        self, inbound: Inbound, transport: Transport, action: str, ref: str, *, ctx: ToolContext | None = None
    ) -> None:
        """A tap on an approval button: decide as the person who tapped (``ctx``: their context, when the caller
        has it already: the same :attr:`context_for` the inbound gives), answer, then follow up."""
        decision = ACTIONS[action]
        aid, revision = parse_ref(ref)  # the version of the arguments the tapped card showed
        try:
            change = await self.desk.decide(
                aid,
                decision,
                ctx or self.context_for(inbound),
                via=inbound.surface,
                note=inbound.note,
                follow=False,
                revision=revision if action in VERSIONED else None,
            )
        except ApprovalRefused as exc:
            await _answer(transport, inbound, _refusal(exc), alert=True)
            if exc.approval is not None:
                await self.outbox.repair(exc.approval, inbound)
            return
        # The answer goes out first, as a bare handler's would: one request of this tap in flight at a time
        # (an HTTP client's pool grows to the requests in flight, and httpcore checks every pooled connection
        # on every request). A slow or failing answer holds the run back at most ``answer_grace`` seconds.
        answered = asyncio.get_running_loop().create_future()
        answering = asyncio.ensure_future(_answer(transport, inbound, change.message, done=answered))
        await _within(answered, self.answer_grace)
        try:
            await self.follow(change)
        finally:
            await answering
        if not self.outbox.knows(change.approval, inbound):
            current = await self.desk.get(change.approval.id)
            if current is not None:
                await self.outbox.repair(current, inbound)

    async def refuse_forged(self, inbound: Inbound, transport: Transport) -> None:
        """A tap whose data the tapped message does not show (:attr:`Inbound.offered` is ``False``): refused,
        deciding and repairing nothing. On a recorded copy of the request it names (a stale client tapping a
        button the card has since lost), it is answered from the record ("Already done."; while the request is
        pending: the card has no such button); a request that
        does not exist is "not valid"; on any other message a decision "does not belong to this message", and
        another button (a page, "Show all", a tool's) "is not valid any more"."""
        log.info(
            "refused a %s tap whose data %r is not on message %s of chat %s (user %s)",
            inbound.surface,
            f"{inbound.action}:{inbound.ref}"[:80],
            inbound.message_id,
            inbound.chat_id,
            inbound.user.id,
        )
        answer = NOT_THIS_MESSAGE if inbound.action in ACTIONS else NOT_ANY_MORE
        if inbound.action in ACTIONS and inbound.ref:
            approval = await self.desk.get(parse_ref(inbound.ref)[0])
            if approval is None:
                answer = NOT_VALID
            elif self.outbox.knows(approval, inbound):
                answer = NOT_ON_THIS_CARD if approval.state == "pending" else _state_answer(approval) or NOT_VALID
        await _answer(transport, inbound, answer, alert=True)

    async def follow(self, change: Change) -> None:
        """After any decision: run what it claimed, then deliver what the record owes (the result), or deliver.

        "Running" is about the tool: a run still going after :attr:`show_running_after` seconds has its
        cards say so, timed from its start to its recorded result (delivering the result is not running)."""
        if not change.claimed:
            await self.outbox.deliver(change.approval)
            return
        failpoint("decision.claimed")
        claimed = change.approval
        meanwhile: list[asyncio.Task[None]] = []
        clock = alarms()  # one timer of the loop serves every alarm (see _alarms)
        alarm = clock.set(
            self.show_running_after,
            lambda: meanwhile.append(asyncio.get_running_loop().create_task(self._meanwhile(claimed))),
        )
        try:
            async with self.desk.holding(claimed):  # a long run keeps its lease
                await self.run(claimed)
        finally:
            clock.clear(alarm)
            if meanwhile:  # its edits are recorded before the result's, so none overtakes the other
                await meanwhile[0]
        await self._deliver_settled(claimed)

    async def _meanwhile(self, claimed: Approval) -> None:
        """Deliver the "Running" cards of a run in progress. A failure (the database away a moment) is
        logged and never ends the run or its lease: the record still owes the edits, a sweep delivers them."""
        try:
            await self.outbox.deliver(claimed)
        except Exception as exc:
            log.warning("approval %s: the running cards are not delivered yet (%s)", claimed.id, exc)

    async def _deliver_settled(self, claimed: Approval) -> None:
        """After the run: deliver what the record owes now (the result, the cards), from the settled record
        this process just wrote when it has it. A failure is logged; a sweep delivers after the hand-off."""
        try:
            current = self.desk.settled(claimed.id) or await self.desk.get(claimed.id)
            if current is not None:  # (nothing owed: delivers nothing)
                await self.outbox.deliver(current)
        except Exception as exc:
            log.warning("approval %s: its result is delivered later (%s)", claimed.id, exc)

    async def sweep(self, limit: int = 200) -> int:
        """Recover what is due: expiries, lost leases, approved runs to start, undelivered effects.

        Reads only due records (the store's due index), at most ``limit`` per call. The first sweep also
        takes over at once what dead processes on this host left (:meth:`ApprovalDesk.recover_dead`): a
        run a crash interrupted is shown as such, a card never sent is sent.
        """
        count = 0
        if not self.desk.recovered_dead:
            for change in await self.desk.recover_dead():
                count += 1
                await self._follow_up(change)
        for approval in await self.desk.due(limit):
            found = await self.desk.recover(approval)
            if found is not None:
                count += 1
                await self._follow_up(found)
        return count

    async def _follow_up(self, change: Change) -> None:
        try:
            await self.follow(change)
        except Exception:
            log.exception("approval %s: following up %s failed", change.approval.id, change.event)


def _refusal(exc: ApprovalRefused) -> str:
    if exc.code in ("NOT_FOUND", "WRONG_KIND"):  # an unknown id, or a button this card never had
        return NOT_VALID
    a = exc.approval
    if a is None or exc.code not in ("CONFLICT", "EXPIRED"):
        return str(exc)
    return _state_answer(a) or str(exc)


def _state_answer(a: Approval) -> str | None:
    """ "Already approved by Maria.", "Already done.": a decided request's state, for a tap that comes too late."""
    base = STATE_ANSWERS.get(a.state)
    who = a.data.get("decided_by_name")
    if base and who and a.state in ("approved", "rejected", "cancelled"):
        return f"{base[:-1]} by {who}."
    return base


async def _within(answered: asyncio.Future[None], seconds: float | None) -> None:
    """Wait until ``answered`` is set, at most ``seconds`` (``None``: no limit) — :func:`asyncio.wait` with a
    timeout, on the loop's shared alarm timer; the answer sets it itself, so the tap goes on in the loop's next
    turn."""
    if answered.done():
        return
    if seconds is None:
        await answered
        return
    clock = alarms()
    alarm = clock.set(seconds, lambda: _settle(answered))
    try:
        await answered
    finally:
        clock.clear(alarm)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def _answer(
    transport: Transport, inbound: Inbound, text: str, *, alert: bool = False, done: asyncio.Future[None] | None = None
) -> None:
    """Answer the tap; a failure is logged and never changes or blocks anything. ``done`` is set once it ends."""
    try:
        await transport.answer(inbound, text, alert=alert)
    except Exception as exc:
        log.warning("could not answer a %s tap (%s); the decision stands", inbound.surface, exc)
    finally:
        if done is not None:
            _settle(done)

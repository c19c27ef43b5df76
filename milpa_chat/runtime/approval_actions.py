"""What people do on a pending request besides deciding it: reassign it, ask its requester a question
(and the answer), comment on it.

Each is one write of the record through :meth:`ApprovalDesk.annotate` (the desk's one compare-and-set
loop) that changes no decision: it adds a note (``notes``: every copy of the card shows it, since the
card key counts them) and, for a reassignment, the ``assigned`` person or group whom the decision rules
then require (:func:`~milpa_chat.runtime.approval_rules.check_assignee`, checked when they act). Each is
also an entry of its own kind in the audit trail (``reassigned``, ``asked``, ``answered``,
``commented``). Who acts is the authenticated context; a model-made one (``ToolContext.by_model``) is
refused and the attempt is audited.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from milpa_chat.runtime.approval import Approval, ApprovalRefused, state_message
from milpa_chat.runtime.approval_rules import Actor, Outcome, check_approver, expire

if TYPE_CHECKING:
    from milpa_chat.runtime.approvals import ApprovalDesk, Change
    from milpa_chat.runtime.context import ToolContext

__all__ = ["MAX_TEXT", "ApprovalActions", "Assignee", "may_see", "refuse_model", "short_ref"]

log = logging.getLogger("milpa_chat.approvals")

#: Longest question, answer or comment kept (characters).
MAX_TEXT = 1000
#: Longest a request's expiry may pause while its requester is asked (seconds).
MAX_PAUSE = 7 * 86400.0
#: Characters of an approval id people type to name it (``/ask 1a2b3c4d ...``).
SHORT = 8


def short_ref(approval_id: str) -> str:
    """The first characters of an approval id: what a card shows and a command names it by."""
    return approval_id[:SHORT]


@dataclass(frozen=True, slots=True)
class Assignee:
    """Whom a request is reassigned to: one person (``principal``) or everyone holding ``scope``."""

    principal: str | None = None
    scope: str | None = None
    name: str = ""

    def __post_init__(self) -> None:
        if bool(self.principal) == bool(self.scope):
            raise ApprovalRefused(
                "Reassign to one person (their id, e.g. telegram:1002) or one group (scope:<name>), not both "
                "or neither.",
                code="VALIDATION_ERROR",
            )

    @classmethod
    def parse(cls, text: str) -> Assignee:
        """``telegram:1002`` / ``slack:T1:U2`` (a person) or ``scope:payments:lead`` (a group)."""
        text = text.strip()
        if text.startswith("scope:") and len(text) > 6:
            return cls(scope=text[6:], name=f"the {text[6:]} group")
        if ":" in text and " " not in text:
            return cls(principal=text, name=text)
        raise ApprovalRefused(
            f"{text!r} names nobody: reassign to a person's id (telegram:1002, slack:T1:U2) or a group "
            "(scope:<scope>).",
            code="VALIDATION_ERROR",
        )

    def to_dict(self) -> dict[str, Any]:
        return {"principal": self.principal, "scope": self.scope, "name": self.name or self.principal or self.scope}


def may_see(a: Approval, ctx: ToolContext, *, on_a_card: bool = False) -> bool:
    """Whether ``ctx`` may see (and comment on) ``a``: its requester, an approver (its approver scopes or
    its assignee), or someone in a chat where a copy of its card is (``on_a_card``, the chat layer knows)."""
    if on_a_card or (ctx.principal and ctx.principal == a.requester_principal):
        return True
    scopes = a.data.get("policy", {}).get("approver_scopes", [])
    assigned = a.data.get("assigned") or {}
    return bool(
        ctx.principal
        and (
            (scopes and ctx.has_any_scope(scopes))
            or assigned.get("principal") == ctx.principal
            or (assigned.get("scope") and ctx.has_any_scope([assigned["scope"]]))
        )
    )


async def refuse_model(desk: ApprovalDesk, subject: object, attempt: str, ctx: ToolContext) -> None:
    """A model-made ``ctx`` never acts on an approval or a batch: refused, logged and, with a trail, audited
    (the desk's one refusal of a model, so every attempt leaves the same lines)."""
    await desk._refuse_model(subject, attempt, ctx)


def _text(text: object, what: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ApprovalRefused(f"Write the {what} after the request's reference; it was empty.", code="VALIDATION_ERROR")
    return text.strip()[:MAX_TEXT]


def _pending(a: Approval, now: float) -> None:
    if a.state != "pending" or a.expires_at <= now:
        raise ApprovalRefused(state_message(a), code="CONFLICT", approval=a)


def _note(v: dict[str, Any], actor: Actor, kind: str, text: str, **more: Any) -> dict[str, Any]:
    note = {"kind": kind, "by": actor.principal, "by_name": actor.name, "at": actor.now, "via": actor.via, "text": text}
    note.update(more)
    v["notes"] = [*v.get("notes", []), note]
    v["noted"] = int(v.get("noted", 0)) + 1
    return note


#: ``placer(value, assignee)``: add the cards a reassignment posts (the chat layer knows where people are).
Placer = Callable[[dict[str, Any], Assignee], None]


class ApprovalActions:
    """Reassign, ask, answer and comment on the requests of ``desk``.

    ``pause_expiry``: while a question to the requester is open the request does not expire (for at most
    ``MAX_PAUSE``); once answered its expiry moves on by the time waited. ``placer``: adds the cards a
    reassignment posts to the new approver (a chat layer sets it)."""

    def __init__(self, desk: ApprovalDesk, *, pause_expiry: bool = False, placer: Placer | None = None) -> None:
        self.desk = desk
        self.pause_expiry = pause_expiry
        self.placer = placer

    async def find(self, ref: str) -> Approval:
        """The pending request whose id is or starts with ``ref`` (at least 8 characters)."""
        ref = (ref or "").strip()
        if len(ref) < SHORT or not ref.isalnum():
            raise ApprovalRefused(
                f"{ref[:40]!r} is not a request reference: give the {SHORT} characters the card shows after 'Ref'.",
                code="VALIDATION_ERROR",
            )
        exact = await self.desk.get(ref)
        if exact is not None:
            return exact
        found = [a for a in await self.desk.listing(state="pending") if a.id.startswith(ref)]
        if len(found) != 1:
            raise ApprovalRefused(
                f"No pending request has the reference {ref!r}." if not found else f"{ref!r} names several requests.",
                code="NOT_FOUND",
            )
        return found[0]

    async def _write(
        self,
        a: Approval,
        ctx: ToolContext,
        kind: str,
        via: str | None,
        fn: Callable[[Approval, dict[str, Any], Actor], str],
    ) -> Change:
        message: list[str] = []

        def change(cur: Approval, v: dict[str, Any], now: float) -> Outcome:
            if cur.state == "pending" and cur.expires_at <= now:
                expire(v)
                return "expired", False, state_message(Approval(cur.id, v, cur.version))
            actor = Actor(ctx, via or ctx.channel, None, now)
            message[:] = [fn(cur, v, actor)]
            return kind, False, message[0]

        done = await self.desk.annotate(a.id, change)
        if done.event == "expired":
            raise ApprovalRefused(done.message, code="EXPIRED", approval=done.approval)
        await self._audit(done, kind)
        return done

    async def _audit(self, done: Change, kind: str) -> None:
        trail = self.desk.trail
        if trail is None or done.event != kind:
            return
        note = (done.approval.data.get("notes") or [{}])[-1]
        fields = {
            "tool": done.approval.label,
            "by": note.get("by"),
            "name": note.get("by_name"),
            "via": note.get("via"),
            "text": note.get("text"),
        }
        if kind == "reassigned":
            fields["to"] = (done.approval.data.get("assigned") or {}).get("name")
        try:
            await trail.append(kind, done.approval.id, fields)
        except Exception:
            log.exception("approval %s: the audit trail could not record %s", done.approval.id, kind)

    # ------------------------------------------------------------------------------------ reassign
    async def reassign(
        self, approval_id: str, to: Assignee | str, ctx: ToolContext, *, via: str | None = None
    ) -> Change:
        """Hand a pending request to another approver or group. Only someone who may decide it now reassigns
        it; whether the new approver may decide is checked when they act (their scopes then)."""
        a = await self._get(approval_id, ctx, "reassign")
        assignee = Assignee.parse(to) if isinstance(to, str) else to

        def fn(cur: Approval, v: dict[str, Any], actor: Actor) -> str:
            _pending(cur, actor.now)
            check_approver(cur, actor.ctx)
            if assignee.principal and assignee.principal == cur.requester_principal:
                raise ApprovalRefused("A request cannot be reassigned to the person who asked for it.")
            v["assigned"] = {**assignee.to_dict(), "by": actor.principal, "by_name": actor.name, "at": actor.now}
            _note(v, actor, "reassigned", f"reassigned to {assignee.to_dict()['name']}")
            if self.placer is not None:
                self.placer(v, assignee)
            return f"Reassigned to {assignee.to_dict()['name']}: they decide it now."

        return await self._write(a, ctx, "reassigned", via, fn)

    # ------------------------------------------------------------------------------ ask and answer
    async def ask(self, approval_id: str, question: str, ctx: ToolContext, *, via: str | None = None) -> Change:
        """An approver asks the requester a question (sent to the requester's chat; the card shows it)."""
        a = await self._get(approval_id, ctx, "ask about")
        text = _text(question, "question")

        def fn(cur: Approval, v: dict[str, Any], actor: Actor) -> str:
            _pending(cur, actor.now)
            check_approver(cur, actor.ctx)
            _note(v, actor, "question", text, answer=None)
            v.setdefault("notices", []).append(
                f"{actor.name} asks about your request to run {cur.label} (ref {short_ref(cur.id)}): {text}\n"
                f"Answer with /answer {short_ref(cur.id)} <your answer>."
            )
            if self.pause_expiry and not v.get("paused"):
                v["paused"] = {"at": actor.now, "expires_at": cur.expires_at}
                v["expires_at"] = actor.now + MAX_PAUSE
            paused = " Its expiry waits for the answer." if v.get("paused") else ""
            return f"Asked {cur.requester_name}; their answer will show on the card.{paused}"

        return await self._write(a, ctx, "asked", via, fn)

    async def answer(self, approval_id: str, text: str, ctx: ToolContext, *, via: str | None = None) -> Change:
        """The requester answers the open question(s) on their request; every copy of the card shows it."""
        a = await self._get(approval_id, ctx, "answer about")
        body = _text(text, "answer")

        def fn(cur: Approval, v: dict[str, Any], actor: Actor) -> str:
            _pending(cur, actor.now)
            if actor.principal != cur.requester_principal:
                raise ApprovalRefused(
                    f"Only {cur.requester_name}, who asked for this request, can answer its questions."
                )
            notes = [dict(n) for n in v.get("notes", [])]
            open_ = [n for n in notes if n["kind"] == "question" and n.get("answer") is None]
            if not open_:
                raise ApprovalRefused("Nobody asked a question about this request; nothing to answer.", code="CONFLICT")
            for n in open_:
                n.update(answer=body, answered_at=actor.now)
            v["notes"] = notes
            _note(v, actor, "answer", body)
            paused = v.pop("paused", None)
            if paused:
                v["expires_at"] = float(paused["expires_at"]) + max(0.0, actor.now - float(paused["at"]))
            return "Your answer is on the request's card."

        return await self._write(a, ctx, "answered", via, fn)

    # ----------------------------------------------------------------------------------- comments
    async def comment(
        self, approval_id: str, text: str, ctx: ToolContext, *, via: str | None = None, on_a_card: bool = False
    ) -> Change:
        """A comment on the card from anyone who may see it (:func:`may_see`)."""
        a = await self._get(approval_id, ctx, "comment on")
        body = _text(text, "comment")

        def fn(cur: Approval, v: dict[str, Any], actor: Actor) -> str:
            _pending(cur, actor.now)
            if not actor.principal or not may_see(cur, actor.ctx, on_a_card=on_a_card):
                raise ApprovalRefused("You cannot comment on this request: you are not its requester or an approver.")
            _note(v, actor, "comment", body)
            return "Comment added to every copy of the card."

        return await self._write(a, ctx, "commented", via, fn)

    async def _get(self, approval_id: str, ctx: ToolContext, attempt: str) -> Approval:
        if ctx.by_model:  # before the record is read
            await refuse_model(self.desk, approval_id, attempt, ctx)
        a = await self.desk.get(approval_id)
        if a is None:
            raise ApprovalRefused(f"Unknown request {approval_id!r} (it may have been removed).", code="NOT_FOUND")
        return a

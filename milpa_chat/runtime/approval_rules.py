"""The rules of each decision of :meth:`ApprovalDesk.decide`: who may take it, from which state, and
what it writes. Each rule checks and changes a copy of the record inside the desk's one
compare-and-set loop, or raises :class:`ApprovalRefused` with a sentence for the person."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from milpa_chat.runtime.approval import Approval, ApprovalRefused, digest, state_message
from milpa_chat.runtime.approval_hooks import Check
from milpa_chat.runtime.approval_stats import reading_seconds
from milpa_chat.runtime.definition import InvalidArguments
from milpa_chat.runtime.limits import check_payload

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.definition import ToolDefinition
    from milpa_chat.runtime.limits import PayloadLimits
    from milpa_chat.runtime.policy import PolicyGate

__all__ = [
    "RULES",
    "Actor",
    "Check",
    "Outcome",
    "Rule",
    "amend",
    "check_approver",
    "check_assignee",
    "expire",
    "may_edit",
    "nudge",
    "registry_check",
    "risk_tier",
    "stale",
]

#: :data:`~milpa_chat.runtime.approval_hooks.Check`: re-validates and re-authorizes edited arguments of an
#: approval as a new call would be; returns the arguments after validation and clamping, or raises
#: :class:`ApprovalRefused` (``errors`` per field).

#: ``(event, claimed, message)``: what a rule did, for :class:`~milpa_chat.runtime.approvals.Change`.
Outcome = tuple[str, bool, str]


@dataclass(frozen=True, slots=True)
class Actor:
    """Who decides (the authenticated context), through which surface, with which note, when."""

    ctx: ToolContext
    via: str
    note: str | None
    now: float

    @property
    def principal(self) -> str | None:
        return self.ctx.principal

    @property
    def name(self) -> str:
        return str(self.ctx.extra.get("user_name") or self.ctx.principal or "someone")


# ----------------------------------------------------------------------- the rules of each decision
class Claims(Protocol):
    """What a rule asks of the desk it runs in: to take the lease of the record being written."""

    def _claim(self, v: dict[str, Any], now: float) -> None: ...

    def _maybe_claim(self, v: dict[str, Any], now: float, can_run: bool) -> bool: ...


Rule = Callable[[Claims, Approval, dict[str, Any], Actor, bool], Outcome]


def _decided(v: dict[str, Any], actor: Actor) -> None:
    v.update(
        decided_by=actor.principal,
        decided_by_name=actor.name,
        decided_at=actor.now,
        decided_via=actor.via,
        decision_note=actor.note,
    )


def expire(v: dict[str, Any]) -> None:
    v.update(state="expired", decided_at=v["expires_at"], decided_via="timeout")


def _open(a: Approval) -> None:
    if a.state != "pending":
        raise ApprovalRefused(state_message(a), code="CONFLICT", approval=a)


def _check_decider(a: Approval, ctx: ToolContext, verb: str) -> None:
    if a.kind != "verification":
        raise ApprovalRefused(
            f"Only {a.requester_name} confirms this request: there is nothing to {verb}.", code="WRONG_KIND"
        )
    if not ctx.principal:
        raise ApprovalRefused(f"Only an identified person can {verb} a request.")
    scopes = a.data["policy"]["approver_scopes"]
    if scopes and not ctx.has_any_scope(scopes):
        raise ApprovalRefused(f"You cannot {verb} this request: it needs one of these scopes: {', '.join(scopes)}.")
    if a.data["policy"]["four_eyes"] and a.requester_principal == ctx.principal:
        raise ApprovalRefused(f"You cannot {verb} your own request (four-eyes rule): another approver must decide.")
    check_assignee(a, ctx, verb)
    if verb == "approve" and a.data["policy"]["four_eyes"] and a.data.get("author") == ctx.principal:
        raise ApprovalRefused(
            "You edited this version of the request, so you cannot approve it (four-eyes rule): "
            "an approver other than the requester and you must approve it."
        )


def check_assignee(a: Approval, ctx: ToolContext, verb: str) -> None:
    """Refuse ``ctx`` when the request was reassigned (``assigned``: a person's ``principal`` or a group's
    ``scope``) to someone else. Checked when they act, not when they were named (see
    :func:`milpa_chat.runtime.approval_actions.reassign`)."""
    assigned = a.data.get("assigned")
    if not assigned:
        return
    person, scope = assigned.get("principal"), assigned.get("scope")
    if (person and ctx.principal == person) or (scope and ctx.has_any_scope([scope])):
        return
    raise ApprovalRefused(
        f"You cannot {verb} this request: {assigned.get('by_name') or 'an approver'} reassigned it to "
        f"{assigned.get('name') or person or scope}, who decides it now."
    )


def check_approver(a: Approval, ctx: ToolContext) -> None:
    """Refuse (with why) ``ctx`` approving ``a``: the kind, the approver scopes and four-eyes."""
    _check_decider(a, ctx, "approve")


def _confirm(desk: Claims, a: Approval, v: dict[str, Any], actor: Actor, can_run: bool) -> Outcome:
    if a.kind != "confirm":
        raise ApprovalRefused(
            "This request is decided by an approver (Approve or Reject), not confirmed.", code="WRONG_KIND"
        )
    if actor.principal != a.requester_principal:
        raise ApprovalRefused(f"Only {a.requester_name} can confirm this.")
    _open(a)
    _decided(v, actor)
    if a.data.get("external"):  # the caller that opened it runs the call (ApprovalDesk.claim), not a follower
        v["state"] = "approved"
        return "confirmed", False, "Confirmed."
    desk._claim(v, actor.now)
    return "confirmed", True, "Confirmed — running it now."


def _cancel(desk: Claims, a: Approval, v: dict[str, Any], actor: Actor, can_run: bool) -> Outcome:
    verb = "cancel" if a.kind == "confirm" else "withdraw"
    if actor.principal != a.requester_principal:
        raise ApprovalRefused(f"Only {a.requester_name} can {verb} this.")
    _open(a)
    v["state"] = "cancelled"
    _decided(v, actor)
    done = "Cancelled" if a.kind == "confirm" else "Withdrawn"
    return "cancelled", False, f"{done} — nothing was done."


def _approve(desk: Claims, a: Approval, v: dict[str, Any], actor: Actor, can_run: bool) -> Outcome:
    _check_decider(a, actor.ctx, "approve")
    _open(a)
    if any(vote["principal"] == actor.principal for vote in a.votes):
        raise ApprovalRefused(
            f"You already approved this request; waiting for {a.quorum - len(a.votes)} more approver(s).",
            code="DUPLICATE",
            approval=a,
        )
    tier = a.data.get("risk") or {}
    if tier.get("level") == "high" and not (actor.note or "").strip():
        raise ApprovalRefused(
            f"This request is high-risk ({tier.get('why')}): approving it needs a typed reason. "
            "Approve again with your reason.",
            code="REASON_REQUIRED",
            approval=a,
        )
    v["votes"] = [
        *a.votes,
        {"principal": actor.principal, "name": actor.name, "at": actor.now, "via": actor.via, "note": actor.note},
    ]
    if len(v["votes"]) >= a.quorum and tier.get("level") == "high" and not a.data.get("second_approver"):
        fast = _too_fast(a, v, tier, actor)
        if fast is not None:
            return "voted", False, fast
    if len(v["votes"]) < a.quorum:
        return "voted", False, f"Approval recorded: {len(v['votes'])} of {a.quorum} approvers so far."
    v["state"] = "approved"
    _decided(v, actor)
    claimed = desk._maybe_claim(v, actor.now, can_run)
    return "approved", claimed, "Approved — running it now." if claimed else "Approved."


def _too_fast(a: Approval, v: dict[str, Any], tier: dict[str, Any], actor: Actor) -> str | None:
    """A high-risk request approved faster than its card can be read (or than the tier's ``fast_seconds``)
    needs one more approver: the quorum grows by one, once (written into ``v``). Returns the answer then."""
    took = max(0.0, actor.now - float(a.data.get("created_at") or actor.now))
    limit = float(tier.get("fast_seconds") or reading_seconds(a))
    if took >= limit:
        return None
    v["policy"]["quorum"] = a.quorum + 1
    v["second_approver"] = {"after": actor.principal, "seconds": round(took, 1), "limit": round(limit, 1)}
    return (
        f"Approval recorded, {took:.0f} s after the request: faster than this high-risk card can be read "
        f"({limit:.0f} s), so a second approver must also approve."
    )


def _reject(desk: Claims, a: Approval, v: dict[str, Any], actor: Actor, can_run: bool) -> Outcome:
    _check_decider(a, actor.ctx, "reject")
    _open(a)
    v["state"] = "rejected"
    _decided(v, actor)
    return "rejected", False, "Rejected — nothing was done."


def _check_rescuer(a: Approval, actor: Actor) -> None:
    if a.state != "effect_uncertain":
        raise ApprovalRefused(state_message(a), code="CONFLICT", approval=a)
    if actor.principal == a.requester_principal:
        return
    if a.kind == "confirm":
        raise ApprovalRefused(f"Only {a.requester_name} can decide what to do with this run.")
    scopes = a.data["policy"]["approver_scopes"]
    if not actor.principal or (scopes and not actor.ctx.has_any_scope(scopes)):
        raise ApprovalRefused("Only the requester or an approver can decide what to do with this run.")


def _run_again(desk: Claims, a: Approval, v: dict[str, Any], actor: Actor, can_run: bool) -> Outcome:
    _check_rescuer(a, actor)
    v.update(state="approved", rescued_by=actor.principal, rescued_by_name=actor.name, rescued_at=actor.now)
    claimed = desk._maybe_claim(v, actor.now, can_run)
    if a.kind == "confirm" and not claimed and not a.data.get("external"):
        desk._claim(v, actor.now)
        claimed = True
    return "run_again", claimed, "Running it again now." if claimed else "It will run again."


def _mark_done(desk: Claims, a: Approval, v: dict[str, Any], actor: Actor, can_run: bool) -> Outcome:
    _check_rescuer(a, actor)
    v.update(
        state="executed",
        outcome=f"Marked as done by {actor.name}.",
        rescued_by=actor.principal,
        rescued_by_name=actor.name,
        rescued_at=actor.now,
        finished_at=actor.now,
    )
    return "marked_done", False, "Marked as done."


RULES: dict[str, Rule] = {
    "confirm": _confirm,
    "cancel": _cancel,
    "approve": _approve,
    "reject": _reject,
    "run_again": _run_again,
    "mark_done": _mark_done,
}


# ------------------------------------------------------------------------------ edit before approve
#: Edits one request may take (its record keeps every revision).
MAX_REVISIONS = 50


class Tools(Protocol):
    """What an edit check reads of a registry: the tools by name, the payload limits and the policy."""

    def get(self, name: str) -> ToolDefinition | None: ...

    @property
    def limits(self) -> PayloadLimits: ...

    @property
    def policy(self) -> PolicyGate: ...


def registry_check(registry: Tools, requester: Callable[[Approval], ToolContext] | None = None) -> Check:
    """A :data:`Check` through ``registry``: its payload limits, the tool's validator (schema, then clamps)
    and its authorization for the requester (``requester(approval)``, else the context they asked with)."""

    async def check(a: Approval, args: dict[str, Any]) -> dict[str, Any]:
        tool = registry.get(a.tool or "")
        schema = (a.data.get("payload") or {}).get("schema") if a.data.get("external") else None
        if tool is None and isinstance(schema, dict):  # a call of another framework: the schema it gave the tool
            check_payload(args, registry.limits)
            return schema_check(schema, args)
        if tool is None:
            raise ApprovalRefused(
                f"'{a.label}' is no longer a registered tool, so this request cannot be edited; reject it instead.",
                code="NOT_FOUND",
            )
        try:
            check_payload(args, registry.limits)
            wire = tool.validator(args).wire
        except InvalidArguments as exc:
            errors: dict[str, str] = {}
            for e in exc.errors:
                errors.setdefault(e.path.split(".", 1)[0], e.message)
            raise ApprovalRefused(
                f"The edited arguments are not valid: {exc}. Correct them and save again.",
                code="VALIDATION_ERROR",
                errors=errors,
            ) from None
        ctx = requester(a) if requester is not None else a.requester_context()
        verdict = await registry.policy.judge(ctx, tool)
        if not verdict.allowed:
            raise ApprovalRefused(
                f"With this edit the request is not allowed for {a.requester_name}: {verdict.reason}", code="FORBIDDEN"
            )
        return dict(wire)

    return check


def schema_check(schema: Mapping[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """``args`` checked against a JSON schema (an external record's): refused with the errors per field."""
    from jsonschema import Draft202012Validator

    errors: dict[str, str] = {}
    for e in Draft202012Validator(schema).iter_errors(args):
        errors.setdefault(str(e.path[0]) if e.path else "", e.message)
    if errors:
        shown = "; ".join(f"{k or 'arguments'}: {v}" for k, v in errors.items())
        raise ApprovalRefused(
            f"The edited arguments are not valid: {shown}. Correct them and save again.",
            code="VALIDATION_ERROR",
            errors=errors,
        )
    return dict(args)


def _check_editor(a: Approval, actor: Actor) -> None:
    if a.tool is None:
        raise ApprovalRefused("This request runs no tool, so it has no arguments to edit.", code="WRONG_KIND")
    if a.data.get("external") and (a.data.get("payload") or {}).get("editable") is False:
        raise ApprovalRefused(
            f"The agent that asked takes no edits of {a.label}: approve or reject it as it is.", code="WRONG_KIND"
        )
    if a.kind == "confirm":
        if actor.principal != a.requester_principal:
            raise ApprovalRefused(f"Only {a.requester_name} can edit this request before confirming it.")
        return
    _check_decider(a, actor.ctx, "edit")


def may_edit(a: Approval, actor: Actor) -> None:
    """Refuse (with why) an edit ``actor`` may not make of ``a`` in its current state."""
    _open(a)
    _check_editor(a, actor)


def changes_of(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, list[Any]]:
    """``{field: [old, new]}`` for every field that differs (``None`` where a side lacks it)."""
    return {k: [old.get(k), new.get(k)] for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)}


def amend(a: Approval, v: dict[str, Any], actor: Actor, wire: dict[str, Any], base: str) -> Outcome:
    """Write ``wire`` (validated from the arguments whose digest is ``base``) as the next revision of ``a``."""
    may_edit(a, actor)
    if a.data.get("digest") != base:
        raise ApprovalRefused(
            "Someone else edited this request while you were editing it; edit the updated card again.",
            code="CONFLICT",
            approval=a,
        )
    changes = changes_of(a.args, wire)
    if not changes:
        raise ApprovalRefused(
            "Nothing changed: after validation the arguments are the same as before.", code="VALIDATION_ERROR"
        )
    if a.revision >= MAX_REVISIONS:
        raise ApprovalRefused(
            f"This request was already edited {a.revision} times; reject it and ask for a new "
            "one with the right arguments.",
            code="CONFLICT",
            approval=a,
        )
    revision = a.revision + 1
    v.update(args=wire, digest=digest(wire), revision=revision, votes=[])
    v["revisions"] = [
        *a.revisions,
        {
            "revision": revision,
            "by": actor.principal,
            "by_name": actor.name,
            "at": actor.now,
            "via": actor.via,
            "digest": v["digest"],
            "changes": changes,
        },
    ]
    if a.kind == "verification":
        v.update(author=actor.principal, author_name=actor.name)
    reset = " Approvals so far were reset." if a.votes else ""
    who = "You" if a.kind == "confirm" else "Another approver"
    return (
        "amended",
        False,
        (
            f"Edited {', '.join(changes)}; every copy of the card shows the change.{reset} "
            + ("Confirm it to run it." if a.kind == "confirm" else f"{who} must approve it.")
        ),
    )


def stale(a: Approval, revision: int) -> None:
    """Refuse a decision taken on a card drawn at an older ``revision`` than the record's."""
    if a.state != "pending" or revision == a.revision:
        return
    last = a.revisions[-1] if a.revisions else {}
    fields = ", ".join(last.get("changes", {})) or "its arguments"
    raise ApprovalRefused(
        f"This card showed an older version of the request: {last.get('by_name') or 'someone'} "
        f"edited {fields} since. Nothing was decided; decide on the updated card.",
        code="STALE",
        approval=a,
    )


# ------------------------------------------------------------------------------------ risk tiers
#: Reversibility an operation may declare that makes a change low-risk (it can be taken back).
_UNDOABLE = frozenset({"reversible", "guaranteed", "compensatable"})


def risk_tier(tool: ToolDefinition, override: str | None = None) -> dict[str, Any]:
    """The risk tier from what ``tool`` declares: ``low`` (reads only, or a change that can be undone and
    reaches nothing outside) is decided with a tap; ``high`` (cannot be undone, reaches outside, or an
    effect not declared) needs a typed reason to approve. ``override`` (``"low"``/``"high"``) wins.

    Returns ``{"level", "why"}``, as the record keeps it."""
    from milpa_chat.runtime.catalogue import effect_words

    why = effect_words(tool)
    if override is not None:
        if override not in ("low", "high"):
            raise ValueError(f"risk is 'low' or 'high', got {override!r}")
        return {"level": override, "why": f"{why}; set to {override} by its policy"}
    effects = tool.extra.get("effects")
    if isinstance(effects, Mapping) and effects.get("mutation"):
        if str(effects["mutation"]) == "none":
            return {"level": "low", "why": why}
        external = str(effects.get("externality") or "none") != "none"
        undoable = str(effects.get("reversibility") or "") in _UNDOABLE
        return {"level": "low" if undoable and not external else "high", "why": why}
    if not tool.effect_declared:
        return {"level": "high", "why": why}
    return {"level": "high" if tool.mutating else "low", "why": why}


def nudge(v: dict[str, Any], now: float, hooks: Sequence[Callable[[dict[str, Any], str], None]]) -> str | None:
    """A reminder or the escalation whose time has come, written into ``v`` (``hooks`` add the cards it
    posts); ``None`` if none is due."""
    policy = v.get("policy", {})
    escalate_at = policy.get("escalate_at")
    if escalate_at is not None and not v.get("escalated") and float(escalate_at) <= now:
        v["escalated"] = True
        v["reminded"] = len(policy.get("remind_at", []))  # an escalation supersedes earlier reminders
        v.setdefault("notices", []).append(
            f"Nobody has decided your request to run {v.get('tool') or v.get('subject')} yet; it now also "
            "went to the escalation approvers."
        )
        kind = "escalation"
    else:
        remind_at = policy.get("remind_at", [])
        done = int(v.get("reminded", 0))
        if done >= len(remind_at) or float(remind_at[done]) > now:
            return None
        v["reminded"] = sum(1 for t in remind_at if float(t) <= now)  # a late sweep reminds once
        kind = "reminder"
    for hook in hooks:
        hook(v, kind)
    return "escalated" if kind == "escalation" else "reminded"

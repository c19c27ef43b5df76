"""Opening an approval: the record a new request starts as (:meth:`ApprovalDesk.open`)."""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from milpa_chat._failpoints import failpoint
from milpa_chat.runtime.approval import (
    COLLECTION,
    Approval,
    ApprovalKind,
    ApprovalRefused,
    as_written,
    digest,
    due_of,
    hold_new_cards,
    pending_effects,
)
from milpa_chat.runtime.approval_hooks import (
    Change,
)

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.definition import VerifyPolicy

from milpa_chat.runtime.desk_core import DeskCore
from milpa_chat.store.base import Encoded, encode_parts

log = logging.getLogger("milpa_chat.approvals")

#: Subjects only a standing-grant change (``guard="standing"``) may carry: ``standing:sign``, ``Standing.lift``, ...
_RESERVED = re.compile(r"\s*standing(?:[:._-]|\s*$)", re.IGNORECASE)


class Opening(DeskCore):
    """Opens pending approvals."""

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
        standing: Mapping[str, Any] | None = None,
    ) -> Approval:
        """Store a new pending approval for ``ctx`` (the requester) and return it.

        ``guard``: the record is decided only by a person's surface (a :meth:`decide` that names
        ``via``: a card, the notebook inbox, the CLI), never by a tool — standing-grant changes.
        ``external``: the call is run by the caller that opened the record (an agent of another framework,
        through :meth:`claim` then :meth:`finish`), never by a follower: a confirm or an approval leaves it
        ``approved`` for that caller to claim.
        ``standing``: a standing grant already answered the call (a
        :meth:`StandingAnswer.to_dict <milpa_chat.runtime.services.StandingAnswer.to_dict>`): the record is
        written decided, with no card and no pending slot — ``approved`` by the grant that lent it (an
        ``external`` caller then claims and runs it), or ``rejected`` with the judge's sentence on a stop;
        its event is ``lent`` or ``stopped``, and the audit log and trail cite the grant."""
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
        if standing is None:
            for opener in self.hooks.openers:
                opener(value, ctx)
        else:
            _answered(value, standing, now)
        if external:
            value.update(external=True, auto_run=False)
        hold_new_cards(value, self.worker, now + self._handoff())
        who = ctx.principal or "anonymous"
        effects = pending_effects(value)
        due = due_of(value, now, effects)
        aid = secrets.token_hex(16)  # 128 bits, 32 characters: "run_again:<id>" fits 64 bytes
        text, parts = encode_parts(COLLECTION, aid, value)  # refused before a slot is taken; the same for any id
        encoded = Encoded(value, text)
        while True:
            if standing is not None:  # decided already: it holds no pending slot
                ttl = self.retention if value["state"] == "rejected" else None
                rec = await self.store.insert(COLLECTION, aid, encoded, due=due, ttl=ttl)
                if rec is not None:
                    break
                aid = secrets.token_hex(16)
                continue
            await self.pending_cap.take(who, aid, value["expires_at"])
            rec = await self.store.insert(COLLECTION, aid, encoded, due=due)
            if rec is not None:
                break
            await self.pending_cap.free(who, aid)
            aid = secrets.token_hex(16)
        failpoint("approval.opened")
        approval = as_written(aid, value, rec.version, rec.due, effects, parts)
        self._remember(approval)
        event = "requested" if standing is None else ("lent" if value["state"] == "approved" else "stopped")
        await self._event(Change(approval, event))
        return approval


def _answered(value: dict[str, Any], standing: Mapping[str, Any], now: float) -> None:
    """Write a standing grant's answer into a new record: decided by the grant, with no card."""
    lent, grant, sentence = standing.get("lent"), standing.get("grant"), standing.get("sentence")
    if not isinstance(lent, bool) or not isinstance(sentence, str) or not (grant is None or isinstance(grant, str)):
        raise TypeError(
            "ApprovalDesk.open(standing=...) takes StandingAnswer.to_dict(): lent (true/false), grant (an id or "
            f"null) and sentence (text), got {dict(standing)!r}"
        )
    value.update(
        state="approved" if lent else "rejected",
        standing={**standing, "receipts": list(standing.get("receipts") or ())},
        decided_by=f"grant:{grant}" if grant else "standing grants",
        decided_by_name=f"standing grant {grant}" if grant else "the standing grants",
        decided_at=now,
        decided_via="standing",
        decision_note=sentence,
        cards=[],
        route=None,
    )

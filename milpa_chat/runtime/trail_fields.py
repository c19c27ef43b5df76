"""What the audit trail's entries about calls and approvals hold: their kinds and fields.

Fields name who, where, which tool and the digests of what ran, never argument values: arguments are kept as
their digest (what ran is checked against what was shown by comparing digests). The trail masks every field
again when it appends (:meth:`~milpa_chat.runtime.trail.AuditTrail.append`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from milpa_chat.runtime.approval_hooks import Change

__all__ = ["EVENTS", "call_fields", "change_entries", "digest"]

#: The trail entry's kind for each change of an approval (changes not named here make no entry).
EVENTS = {
    "requested": "requested",
    "confirmed": "decided",
    "voted": "decided",
    "approved": "decided",
    "rejected": "decided",
    "cancelled": "decided",
    "run_again": "decided",
    "marked_done": "decided",
    "expired": "expired",
    "lent": "decided",  # a standing grant answered the call: requested and decided in one write
    "stopped": "decided",
    "claimed": "started",
    "retrying": "retrying",
    "uncertain": "uncertain",
    "finished": "result",
    "reminded": "reminded",
    "escalated": "escalated",
}


def call_fields(event: Any) -> dict[str, Any]:
    """The fields of a ``call`` entry: a tool call's ``tool.executed`` / ``tool.failed`` event."""
    result = getattr(event, "result", None)
    return {
        "principal": event.ctx.principal,
        "channel": event.ctx.channel,
        "args_digest": digest(getattr(event, "args", {}) or {}),
        "ok": bool(result.success) if result is not None else False,
        "code": None if result is None or result.success else result.code,
        "key": event.ctx.idempotency_key,
    }


def change_entries(change: Change) -> list[tuple[str, str, Mapping[str, Any]]]:
    """The entries (kind, subject, fields) for one change of an approval: its own, and ``started`` when the
    same write claimed the run (who holds it, with which idempotency key)."""
    kind = EVENTS.get(change.event)
    if kind is None:
        return []
    v = change.approval.data
    items: list[tuple[str, str, Mapping[str, Any]]] = []
    if change.event in ("lent", "stopped"):
        items.append(("requested", change.approval.id, _change_fields("requested", change)))
    if kind != "started":
        items.append((kind, change.approval.id, _change_fields(kind, change)))
    if change.claimed:
        started = {
            "tool": change.approval.label,
            "args_digest": v.get("digest"),
            "attempt": change.approval.attempt,
            "worker": (v.get("lease") or {}).get("holder"),
            "key": change.approval.id,
        }
        items.append(("started", change.approval.id, started))
    return items


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


def _change_fields(kind: str, change: Change) -> dict[str, Any]:
    """The fields of a ``requested``, ``decided``, ``result`` (or other) entry about an approval."""
    v = change.approval.data
    fields: dict[str, Any] = {
        "tool": change.approval.label,
        "state": change.approval.state,
        "args_digest": v.get("digest"),
    }
    if kind == "requested":
        fields.update(
            requester=v["requester"]["principal"],
            channel=v["requester"].get("channel"),
            kind=v["kind"],
            quorum=change.approval.quorum,
        )
    elif kind == "decided":
        voter = change.approval.votes[-1] if change.event == "voted" and change.approval.votes else {}
        fields.update(
            by=voter.get("principal") or v.get("rescued_by") or v.get("decided_by"),
            name=voter.get("name") or v.get("decided_by_name"),
            via=voter.get("via") or v.get("decided_via"),
            note=voter.get("note") if voter else v.get("decision_note"),
            decision=change.event,
        )
        standing = v.get("standing")
        if change.event in ("lent", "stopped") and isinstance(standing, Mapping):
            fields.update(
                grant=standing.get("grant"),
                receipts=[f"{r.get('operation')}@{r.get('content')}" for r in standing.get("receipts") or ()],
            )
    elif kind == "result":
        result = v.get("result") or {}
        fields.update(
            ok=result.get("success"), code=(result.get("meta") or {}).get("code"), result_digest=digest(result)
        )
    return fields

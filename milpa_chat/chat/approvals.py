"""The durable ``Approval``: one record per decision a human makes, shown on any number of surfaces.

Kinds: ``confirm`` (the requester confirms their own mutating call: Confirm / Cancel) and
``verification`` (someone else decides: Approve / Reject, through ``resolve_verification``).

States: ``pending -> approved | rejected | cancelled | expired``; ``approved -> executing ->
executed | failed``. Every transition is a compare-and-set on the record's version in the store,
so double taps, two approvers at once, redelivered updates and several workers change a record
at most once. Each message that shows the approval is recorded, so every copy is edited after a
decision (also after a restart).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from milpa_chat.chat.inbound import ChatUser, MessageRef

if TYPE_CHECKING:
    from milpa_chat.renderers.approval import ApprovalView
    from milpa_chat.store.base import Store

__all__ = ["Approval", "ApprovalBook", "ApprovalKind", "ApprovalState"]

COLLECTION = "approvals"
ApprovalKind = Literal["confirm", "verification"]
ApprovalState = Literal["pending", "approved", "rejected", "cancelled", "expired", "executing", "executed", "failed"]
DECIDED = frozenset({"approved", "rejected", "cancelled", "expired", "executing", "executed", "failed"})


def digest(args: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the arguments (sorted keys), to show what exactly was approved."""
    text = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Approval:
    """A stored approval (read-only view). ``version`` is the store version for compare-and-set."""

    id: str
    data: dict[str, Any]
    version: int

    @property
    def kind(self) -> ApprovalKind:
        return self.data["kind"]  # type: ignore[no-any-return]

    @property
    def state(self) -> ApprovalState:
        return self.data["state"]  # type: ignore[no-any-return]

    @property
    def tool(self) -> str:
        return str(self.data["tool"])

    @property
    def args(self) -> dict[str, Any]:
        return dict(self.data["args"])

    @property
    def requester(self) -> ChatUser:
        u = self.data["requester"]["user"]
        return ChatUser(u["id"], u.get("name", ""), u.get("username"), u.get("team"))

    @property
    def requester_principal(self) -> str:
        return str(self.data["requester"]["principal"])

    @property
    def requester_surface(self) -> str:
        return str(self.data["requester"]["surface"])

    @property
    def requester_chat(self) -> str:
        return str(self.data["requester"]["chat_id"])

    @property
    def expires_at(self) -> float:
        return float(self.data["expires_at"])

    @property
    def messages(self) -> list[MessageRef]:
        """The cards that were sent (announced cards whose send never completed are left out)."""
        return [MessageRef.from_dict(m) for m in self.data.get("messages", []) if m.get("message_id")]

    def view(self) -> ApprovalView:
        """The card model the renderers draw."""
        from milpa_chat.renderers.approval import ApprovalView

        d = self.data
        decided_at = d.get("decided_at")
        return ApprovalView(
            id=self.id, kind=self.kind, tool=self.tool, arguments=self.args,
            requester=self.requester.display, requester_principal=self.requester_principal,
            expires_at=datetime.fromtimestamp(self.expires_at, UTC), state=self.state,
            reason=d.get("reason"), mutating=bool(d.get("mutating", True)),
            decided_by=d.get("decided_by_name") or d.get("decided_by"),
            decided_at=None if decided_at is None else datetime.fromtimestamp(decided_at, UTC),
            decided_via=d.get("decided_via"), decision_note=d.get("decision_note"), outcome=d.get("outcome"),
            approvals_required=int(d.get("quorum", 1)), approved_by=tuple(d.get("approved_by", ())),
        )


class ApprovalBook:
    """Approvals in the store, with atomic transitions."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def create(
        self,
        *,
        kind: ApprovalKind,
        tool: str,
        args: Mapping[str, Any],
        requester: ChatUser,
        principal: str,
        surface: str,
        chat_id: str,
        expires_at: float,
        mutating: bool = True,
        reason: str | None = None,
        confirm_token: str | None = None,
        verification_id: str | None = None,
        quorum: int = 1,
        resume: Mapping[str, Any] | None = None,
        posts: Iterable[tuple[str, str, str]] = (),
    ) -> Approval:
        """Store a new pending approval. ``posts`` lists the cards about to be sent as
        ``(surface, chat_id, role)``; they are recorded before sending, so a crash between sending a
        card and recording its message id still leaves a trace the decision can act on (see
        :meth:`fill_message`)."""
        value: dict[str, Any] = {
            "kind": kind, "tool": tool, "args": dict(args), "digest": digest(args), "mutating": mutating,
            "reason": reason, "state": "pending", "created_at": self.store.clock(), "expires_at": expires_at,
            "requester": {"principal": principal, "surface": surface, "chat_id": chat_id,
                          "user": {"id": requester.id, "name": requester.name, "username": requester.username,
                                   "team": requester.team}},
            "confirm_token": confirm_token, "verification_id": verification_id, "quorum": quorum,
            "approved_by": [],
            "messages": [{"surface": sf, "chat_id": ch, "message_id": None, "role": role} for sf, ch, role in posts],
            "decided_by": None, "decided_by_name": None,
            "decided_at": None, "decided_via": None, "decision_note": None, "outcome": None,
            "resume": dict(resume or {}),
        }
        while True:
            aid = secrets.token_urlsafe(12)  # 16 characters, 96 bits: fits "approve:<id>" in 64 bytes
            rec = await self.store.insert(COLLECTION, aid, value)
            if rec is not None:
                return Approval(aid, value, rec.version)

    async def get(self, approval_id: str) -> Approval | None:
        if not approval_id:
            return None
        rec = await self.store.get(COLLECTION, approval_id)
        return None if rec is None else Approval(rec.key, rec.value, rec.version)

    async def transition(
        self, approval: Approval, to: ApprovalState, *, expect: Iterable[str], **changes: Any
    ) -> Approval | None:
        """Move ``approval`` to ``to`` if it is still at the version read and in one of ``expect``.

        Returns the new record, or ``None`` when someone else changed it first.
        """
        if approval.state not in set(expect):
            return None
        value = {**approval.data, **changes, "state": to}
        rec = await self.store.update(COLLECTION, approval.id, value, expected_version=approval.version)
        return None if rec is None else Approval(approval.id, value, rec.version)

    async def update(self, approval: Approval, **changes: Any) -> Approval | None:
        """Change fields without changing the state (compare-and-set)."""
        return await self.transition(approval, approval.state, expect=[approval.state], **changes)

    async def fill_message(self, approval_id: str, surface: str, chat_id: str, message_id: str) -> Approval | None:
        """Record the message id of a card announced in ``create(posts=...)`` (or add it if unannounced)."""
        while True:
            current = await self.get(approval_id)
            if current is None:
                return None
            messages = [dict(m) for m in current.data.get("messages", [])]
            slot = next((m for m in messages if m["surface"] == surface and m["chat_id"] == chat_id
                         and m.get("message_id") is None), None)
            if slot is None:
                messages.append({"surface": surface, "chat_id": chat_id, "message_id": message_id, "role": "approver"})
            else:
                slot["message_id"] = message_id
            done = await self.update(current, messages=messages)
            if done is not None:
                return done

    async def pending(self) -> list[Approval]:
        recs = await self.store.scan(COLLECTION, where={"state": "pending"})
        return [Approval(r.key, r.value, r.version) for r in recs]

    async def in_state(self, state: ApprovalState) -> list[Approval]:
        recs = await self.store.scan(COLLECTION, where={"state": state})
        return [Approval(r.key, r.value, r.version) for r in recs]

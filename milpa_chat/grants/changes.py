"""Changes of standing grants — signing, suspending, lifting, revoking, superseding — each an approval.

Every change is an :class:`~milpa_chat.runtime.Approval` of its own (kind ``verification``, subject
``standing:<action>``), opened and decided through :meth:`ApprovalDesk.decide`, the one decision path:
durable, decided exactly once, with the decider's platform identity, audited like any approval.
Its record carries ``guard="standing"``: only a person's surface (a card, the notebook inbox, the
CLI) decides it, never a tool.

* **sign** — :meth:`GrantChanges.draft` (or "Always allow…" on an approver's card,
  :meth:`GrantChanges.draft_from`) keeps the grant as a ``draft`` and opens its signature, showing the
  whole text in canonical spelling (the request's ``reason``). Signing is the approval of that record:
  a second, separate step.
  With the grant's ``four_eyes`` rule (the default), the person who drafted it cannot sign it.
  A grant that supersedes others takes them out of force when it is signed.
* **suspend**, **revoke** — a stop: asked and decided in one go by a person who may sign.
* **lift** — growing back: opened by one person, decided by a signer (per the grant's rule).

The grant record names the approvals of its pending changes; an approval that no grant names (a
``request_verification`` with a look-alike subject) changes nothing.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from milpa_chat.command.canonical import Canonical
from milpa_chat.command.effects import EffectProfile
from milpa_chat.grants.calls import NamedCall
from milpa_chat.grants.document import StandingGrant
from milpa_chat.grants.errors import InvalidGrant
from milpa_chat.grants.records import ACTIONS, COLLECTION, GrantOffer, GrantRecord, when
from milpa_chat.grants.rules import fixable
from milpa_chat.runtime.approval import Approval, ApprovalRefused
from milpa_chat.runtime.caps import Cap
from milpa_chat.store.base import copy_value

if TYPE_CHECKING:
    from milpa_chat.command.atom import Operation
    from milpa_chat.runtime.approvals import ApprovalDesk
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.store.base import Store

__all__ = ["GUARD", "GrantChanges", "Watcher", "conversation_of"]

log = logging.getLogger("milpa_chat.grants")

#: The guard on every grant-change approval: decided only with a surface named (``via``), never by a tool.
GUARD = "standing"
Watcher = Callable[[GrantRecord, str], Awaitable[None]]
_DONE = frozenset({"approved", "executing", "executed"})
_NOT_DONE = frozenset({"rejected", "cancelled", "expired", "failed"})


class GrantChanges:
    """The change half of :class:`~milpa_chat.grants.desk.GrantDesk`."""

    store: Store
    approvals: ApprovalDesk
    signer_scopes: tuple[str, ...]
    four_eyes: bool
    expires_in: float
    draft_cap: Cap
    operations: dict[str, Operation]
    offers: dict[str, GrantOffer]

    if TYPE_CHECKING:

        async def get(self, grant_id: str) -> GrantRecord | None: ...

        async def listing(self, *, state: str | None = None) -> list[GrantRecord]: ...

        def operation_of(self, tool: Any) -> Operation | None: ...

    def _init_changes(self) -> None:
        #: Called with the grant and the action after each change is applied (a chat layer edits cards).
        self.watchers: list[Watcher] = []
        for name in ("granted", "rejected", "cancelled", "expired"):
            self.approvals.hooks.dispatcher.subscribe(f"verification.{name}", self._on_decided)

    async def _on_decided(self, _name: str, payload: Mapping[str, Any]) -> None:
        approval = payload.get("event")
        if isinstance(approval, Approval):
            await self.apply(approval)

    # ------------------------------------------------------------------ who may
    def may_sign(self, ctx: ToolContext) -> bool:
        """Whether ``ctx`` may sign, lift, suspend or revoke (holds a signer scope)."""
        return bool(ctx.principal) and ctx.has_any_scope(self.signer_scopes)

    def _refuse_unless_signer(self, ctx: ToolContext, verb: str) -> None:
        _refuse_model(ctx, verb)
        if not ctx.principal:
            raise ApprovalRefused(f"Only an identified person can {verb} a standing grant.")
        if not self.may_sign(ctx):
            raise ApprovalRefused(
                f"You cannot {verb} a standing grant: it needs one of these scopes: {', '.join(self.signer_scopes)}."
            )

    # ------------------------------------------------------------------ draft and sign
    async def draft(
        self,
        grant: StandingGrant | str,
        ctx: ToolContext,
        *,
        via: str,
        note: str | None = None,
        four_eyes: bool | None = None,
        lends_in: str | None = None,
    ) -> tuple[GrantRecord, Approval]:
        """Keep ``grant`` (a document, or its JSON text, read strictly) as a draft and open its signature.

        ``four_eyes``: whether the drafter is kept from signing it (default: the desk's rule).
        ``lends_in``: one conversation (:func:`conversation_of`) outside which the grant lends nothing (kept
        beside the text: it can only narrow what the signed text allows).
        Raises :class:`InvalidGrant` for a text that does not read, :class:`ApprovalRefused` when
        an id is taken or a superseded grant is suspended and the draft does not say ``lifts``.
        """
        if isinstance(grant, str):
            grant = StandingGrant.from_json(grant)
        if not isinstance(grant, StandingGrant):
            raise TypeError(f"draft takes a StandingGrant or its JSON text, got {type(grant).__name__}")
        _refuse_model(ctx, "draft")
        if not ctx.principal:
            raise ApprovalRefused("Only an identified person can draft a standing grant.")
        await self._check_supersedes(grant)
        rule = self.four_eyes if four_eyes is None else bool(four_eyes)
        now = self.store.clock()
        value = {
            "document": grant.to_json(),
            "digest": grant.digest(),
            "state": "draft",
            "uses": 0,
            "drafted_by": _who(ctx, via),
            "drafted_at": now,
            "four_eyes": rule,
            "lends_in": lends_in,
            "signed_by": None,
            "signed_digest": None,
            "stopped_because": None,
            "pending": {},
            "history": [],
            "cards": [],
        }
        await self.draft_cap.take(ctx.principal, grant.id, now + self.expires_in)  # its signature's expiry
        if await self.store.insert(COLLECTION, grant.id, value) is None:
            await self.draft_cap.free(ctx.principal, grant.id)
            raise ApprovalRefused(
                f"A standing grant with id {Canonical.shown(grant.id)} exists already; give the draft another id.",
                code="CONFLICT",
            )
        try:
            approval = await self._open("sign", grant, ctx, note=note, four_eyes=rule)
        except ApprovalRefused:  # the drafter has too many requests open: no draft without its signature
            await self.store.delete(COLLECTION, grant.id)
            await self.draft_cap.free(ctx.principal, grant.id)
            raise
        record = await self._link(grant.id, approval.id, "sign")
        return record, approval

    async def draft_loosening(
        self, ctx: ToolContext, seconds: float, *, via: str, note: str | None = None
    ) -> list[tuple[GrantRecord, Approval]]:
        """The standing grants a per-conversation loosening ("no confirmation for reads for 1 hour") drafts:
        for ``ctx``'s seat, every read-only operation the desk knows with an offer (one grant per offer, with
        its conditions, falsifier and undo), a read-only ceiling, expiring ``seconds`` from now. Each is a
        draft whose signature is opened like any other (:meth:`draft`): nothing is lent until a person who
        may sign signs it, and once it expires calls ask as before. Raises :class:`ApprovalRefused` when no
        read-only operation offers a grant (nothing to draft)."""
        conversation = conversation_of(ctx)
        if conversation is None:
            raise ApprovalRefused("A loosening is set by a person in a chat; this call came from none.")
        groups: dict[int, tuple[GrantOffer, list[str]]] = {}
        for key, operation in sorted(self.operations.items()):
            offer = self.offers.get(key)
            if offer is not None and not operation.may_mutate and operation.acts_on is not None:
                groups.setdefault(id(offer), (offer, []))[1].append(operation.name)
        if not groups:
            raise ApprovalRefused(
                "No read-only operation here offers a standing grant, so a loosening has nothing to lend: "
                "declare one with GrantDesk.know(operation, offer=GrantOffer(...)). Nothing was changed.",
                code="VALIDATION_ERROR",
            )
        expires = when(float(int(self.store.clock() + float(seconds))))
        grants = []
        for offer, names in groups.values():  # every text is built before any is drafted
            try:
                grant = StandingGrant(
                    id=f"mode-{secrets.token_hex(4)}",
                    to=(str(ctx.principal),),
                    operations=tuple(NamedCall(name) for name in names),
                    ceiling=EffectProfile.read_only(),  # reads only: a loosening never lends a call with effects
                    conditions=offer.conditions,
                    falsifier=offer.falsifier,
                    undo=offer.undo,
                    expires_at=expires,
                )
            except InvalidGrant as exc:
                raise ApprovalRefused(
                    f"The loosening cannot be drafted into a standing grant: {exc}. Nothing was changed.",
                    code="VALIDATION_ERROR",
                ) from None
            grants.append(grant)
        return [await self.draft(grant, ctx, via=via, note=note, lends_in=conversation) for grant in grants]

    async def _check_supersedes(self, grant: StandingGrant) -> None:
        for old_id in grant.supersedes or ():
            old = await self.get(old_id)
            if old is None or not old.judged:
                raise ApprovalRefused(
                    f"The draft supersedes {Canonical.shown(old_id)}, which is no signed grant.",
                    code="VALIDATION_ERROR",
                )
            if old.state == "suspended" and grant.lifts is None:
                raise ApprovalRefused(
                    f"{Canonical.shown(old_id)} is suspended: a grant that supersedes it says which suspension it "
                    f'lifts ("lifts"), since taking a stopped grant out of the way is growing back.',
                    code="VALIDATION_ERROR",
                )

    def offer_for(self, approval: Approval) -> GrantOffer | None:
        """The offer "Always allow…" would draft from for this approval's call, or ``None`` (not eligible)."""
        if approval.tool is None or approval.data.get("guard"):
            return None
        operation = self.operation_of(approval.tool)
        if operation is None or operation.acts_on is None:
            return None
        return self.offers.get(operation.id.canonical)

    def draft_of(
        self,
        approval: Approval,
        grant_id: str | None = None,
        *,
        replaces: Mapping[str, str] | None = None,
    ) -> StandingGrant:
        """The grant "Always allow…" drafts from ``approval``: the requester's seat, this operation with the
        offer's fixed arguments as the call carried them, the offer's ceiling, conditions and falsifier.

        ``replaces`` (grant id -> state): the grants it supersedes once signed; when one is suspended, the
        draft says which suspension it lifts (so the signer sees that signing it grows a stopped grant back).
        """
        offer = self.offer_for(approval)
        if offer is None:
            raise ApprovalRefused("This request's operation offers no standing grant.", code="VALIDATION_ERROR")
        operation = self.operation_of(approval.tool or "")
        assert operation is not None
        args = approval.args
        fixed = {k: args[k] for k in offer.fixed if k in args and fixable(args[k])}
        lasts = offer.lasts
        return StandingGrant(
            id=grant_id or f"g-{secrets.token_hex(4)}",
            to=(approval.requester_principal,),
            operations=(NamedCall(operation.name, fixed),),
            ceiling=offer.ceiling if offer.ceiling is not None else operation.effect_ceiling(),
            conditions=offer.conditions,
            falsifier=offer.falsifier,
            undo=offer.undo,
            expires_at=None if lasts is None else when(float(int(self.store.clock() + lasts))),
            supersedes=tuple(replaces) if replaces else None,
            lifts=_lifts(replaces or {}),
        )

    async def draft_from(
        self,
        approval_id: str,
        ctx: ToolContext,
        *,
        via: str,
        note: str | None = None,
    ) -> tuple[GrantRecord, Approval]:
        """ "Always allow…" on the card of ``approval_id``: a person who may decide that request drafts
        the grant (:meth:`draft_of`) and its signature is opened — nothing is lent until it is signed."""
        _refuse_model(ctx, "draft")
        approval = await self.approvals.get(approval_id)
        if approval is None:
            raise ApprovalRefused(f"Unknown request {approval_id!r}.", code="NOT_FOUND")
        scopes = approval.data["policy"]["approver_scopes"]
        may = (approval.kind == "confirm" and ctx.principal == approval.requester_principal) or (
            approval.kind == "verification" and bool(ctx.principal) and (not scopes or ctx.has_any_scope(scopes))
        )
        if not may:
            raise ApprovalRefused("Only a person who may decide this request can draft a standing grant from it.")
        try:
            grant = self.draft_of(approval, replaces=await self._replaced(approval))
        except InvalidGrant as exc:
            raise ApprovalRefused(
                f"This request cannot be drafted into a standing grant: {exc}", code="VALIDATION_ERROR"
            ) from None
        return await self.draft(grant, ctx, via=via, note=note)

    async def _replaced(self, approval: Approval) -> dict[str, str]:
        """The grants in force or suspended that lend to this request's seat and cover its operation."""
        operation = self.operation_of(approval.tool or "")
        found: dict[str, str] = {}
        if operation is None:
            return found
        for record in await self.listing():
            grant = record.readable() if record.state in ("in_force", "suspended") else None
            if grant is not None and grant.lends_to(approval.requester_principal) and grant.covers(operation.name):
                found[record.id] = record.state
        return found

    # ------------------------------------------------------------------ stops and lifts
    async def request(
        self,
        action: str,
        grant_id: str,
        ctx: ToolContext,
        *,
        via: str,
        note: str | None = None,
    ) -> tuple[GrantRecord, Approval]:
        """Ask for ``suspend``, ``revoke`` (decided at once by ``ctx``: a stop always stops) or ``lift``
        (opened for a signer to decide, per the grant's rule)."""
        if action not in ("suspend", "lift", "revoke"):
            raise ApprovalRefused(f"Unknown change {action!r}; use suspend, lift or revoke.", code="VALIDATION_ERROR")
        record = await self.get(grant_id)
        if record is None:
            raise ApprovalRefused(f"Unknown standing grant {grant_id!r}.", code="NOT_FOUND")
        self._refuse_unless_signer(ctx, action)
        _check_state(record, action)
        grant = record.document()
        if action == "lift":
            approval = await self._open("lift", grant, ctx, note=note, four_eyes=bool(record.data.get("four_eyes")))
            return await self._link(grant_id, approval.id, action), approval
        approval = await self._open(action, grant, ctx, note=note, four_eyes=False)
        await self._link(grant_id, approval.id, action)
        change = await self.approvals.decide(approval.id, "approve", ctx, via=via, note=note)
        record = await self.apply(change.approval) or record
        return record, change.approval

    async def decide(
        self,
        approval_id: str,
        decision: str,
        ctx: ToolContext,
        *,
        via: str,
        note: str | None = None,
    ) -> tuple[GrantRecord | None, Approval]:
        """Sign / lift (``approve``) or decline (``reject``) a waiting change, through the one decision path."""
        if decision not in ("approve", "reject", "cancel"):
            raise ApprovalRefused(f"Unknown decision {decision!r}; use approve or reject.", code="VALIDATION_ERROR")
        change = await self.approvals.decide(approval_id, decision, ctx, via=via, note=note)
        return await self.apply(change.approval), change.approval

    # ------------------------------------------------------------------ applying what was decided
    async def apply(self, approval: Approval) -> GrantRecord | None:
        """Write what a decided change says into its grant, once (a second call finds nothing pending)."""
        payload = approval.data.get("payload") or {}
        action, grant_id = payload.get("grant_change"), payload.get("grant")
        if approval.data.get("guard") != GUARD or action not in ACTIONS or not isinstance(grant_id, str):
            return None
        if approval.state not in _DONE and approval.state not in _NOT_DONE:
            return None
        while True:
            record = await self.get(grant_id)
            if record is None or approval.id not in record.pending:
                return record
            value = copy_value(record.data)
            value["pending"].pop(approval.id)
            d = approval.data
            entry = {
                "action": action,
                "approval": approval.id,
                "by": d.get("decided_by"),
                "name": d.get("decided_by_name"),
                "via": d.get("decided_via"),
                "at": d.get("decided_at"),
                "note": d.get("decision_note"),
                "done": approval.state in _DONE,
            }
            if entry["done"]:
                entry["outcome"] = _do(action, record, value, approval)
            else:
                entry["outcome"] = f"not done: the request was {approval.state}"
                if action == "sign" and value["state"] == "draft":
                    value["state"] = "declined"
            value["history"].append(entry)
            rec = await self.store.update(COLLECTION, grant_id, value, expected_version=record.version)
            if rec is None:
                continue
            done = GrantRecord(grant_id, value, rec.version)
            if record.state == "draft" and done.state != "draft":  # signed or declined: a draft slot frees
                await self.draft_cap.free(str(record.data.get("drafted_by", {}).get("principal")), grant_id)
            log.info("standing grant %s: %s -> %s (%s)", grant_id, action, done.state, entry["outcome"])
            if action == "sign" and done.state == "in_force":
                await self._supersede(done)
            await self._tell(done, action)
            return done

    async def _supersede(self, record: GrantRecord) -> None:
        grant = record.readable()
        for old_id in (grant.supersedes or ()) if grant else ():
            while True:
                old = await self.get(old_id)
                if old is None or old.state not in ("in_force", "suspended"):
                    break
                value = {
                    **old.data,
                    "state": "superseded",
                    "superseded_by": record.id,
                    "history": [
                        *old.data.get("history", []),
                        {"action": "superseded", "by_grant": record.id, "at": self.store.clock()},
                    ],
                }
                if await self.store.update(COLLECTION, old_id, value, expected_version=old.version) is not None:
                    await self._tell(GrantRecord(old_id, value, old.version + 1), "superseded")
                    break

    async def _tell(self, record: GrantRecord, action: str) -> None:
        for watcher in list(self.watchers):
            try:
                await watcher(record, action)
            except Exception:  # a card that could not be edited is retried by the chat layer, never blocks
                log.exception("a grant watcher failed for %s (%s)", record.id, action)

    async def sweep(self) -> int:
        """Apply every decided change a crash (or another process) left unwritten; how many were applied."""
        before = {
            r.id: r.version
            for r in [GrantRecord(x.key, dict(x.value), x.version) for x in await self.store.scan(COLLECTION)]
        }
        after = await self.listing()
        return sum(1 for r in after if before.get(r.id) != r.version)

    # ------------------------------------------------------------------ helpers
    async def _open(
        self,
        action: str,
        grant: StandingGrant,
        ctx: ToolContext,
        *,
        note: str | None,
        four_eyes: bool,
    ) -> Approval:
        from milpa_chat.runtime.definition import VerifyPolicy

        ops = ", ".join(Canonical.short(e.operation) for e in grant.operations)
        verbs = {"sign": "Sign", "suspend": "Suspend", "lift": "Lift the suspension of", "revoke": "Revoke"}
        summary = f"{verbs[action]} standing grant {Canonical.shown(grant.id)}: {ops} for {', '.join(grant.to)}"
        if action == "sign" and note:
            summary += f" ({note})"
        policy = VerifyPolicy(
            approver_scopes=self.signer_scopes, four_eyes=four_eyes, quorum=1, expires_in=self.expires_in
        )
        return await self.approvals.open(
            "verification",
            ctx,
            tool=None,
            args={"grant": grant.id, "action": action},
            summary=summary,
            expires_in=self.expires_in,
            policy=policy,
            subject=f"standing:{action}",
            reason=grant.to_json() if action == "sign" else note,
            payload={"grant_change": action, "grant": grant.id, "digest": grant.digest()},
            guard=GUARD,
        )

    async def _link(self, grant_id: str, approval_id: str, action: str) -> GrantRecord:
        while True:
            record = await self.get(grant_id)
            if record is None:
                raise ApprovalRefused(f"Unknown standing grant {grant_id!r}.", code="NOT_FOUND")
            value = {**record.data, "pending": {**record.pending, approval_id: action}}
            rec = await self.store.update(COLLECTION, grant_id, value, expected_version=record.version)
            if rec is not None:
                return GrantRecord(grant_id, value, rec.version)


def _lifts(replaces: Mapping[str, str]) -> str | None:
    suspended = [gid for gid, state in replaces.items() if state == "suspended"]
    if not suspended:
        return None
    return "the suspension of " + ", ".join(Canonical.shown(gid) for gid in suspended) + ", replaced by this grant"


def conversation_of(ctx: ToolContext) -> str | None:
    """``<channel>:<chat id>`` of the chat ``ctx`` speaks in (``None`` outside a chat)."""
    chat = ctx.extra.get("chat_id")
    return None if chat is None else f"{ctx.channel}:{chat}"


def _refuse_model(ctx: ToolContext, verb: str) -> None:
    """A model never drafts, signs, lifts, suspends or revokes a grant, whoever it speaks for."""
    if ctx.by_model:
        raise ApprovalRefused(
            f"A model cannot {verb} a standing grant: only a person does, on a card, in the notebook or with "
            "milpa-chat grants. Nothing was changed.",
            code="FORBIDDEN",
        )


def _who(ctx: ToolContext, via: str) -> dict[str, Any]:
    return {"principal": ctx.principal, "name": str(ctx.extra.get("user_name") or ctx.principal), "via": via}


def _check_state(record: GrantRecord, action: str) -> None:
    allowed = {"suspend": ("in_force",), "lift": ("suspended",), "revoke": ("in_force", "suspended")}[action]
    if record.state not in allowed:
        raise ApprovalRefused(
            f"Standing grant {Canonical.shown(record.id)} is {record.state}: it cannot be "
            f"{'lifted' if action == 'lift' else action + 'ed'}.",
            code="CONFLICT",
        )


def _do(action: str, record: GrantRecord, value: dict[str, Any], approval: Approval) -> str:
    d = approval.data
    name = d.get("decided_by_name") or d.get("decided_by")
    if action == "sign":
        if record.state != "draft":
            return f"not done: the grant is {record.state}"
        payload = d.get("payload") or {}
        grant = record.readable()
        if grant is None or payload.get("digest") != grant.digest():
            value["state"] = "declined"
            return "not done: the text kept is not the text that was shown for signing"
        value.update(
            state="in_force",
            signed_at=d.get("decided_at"),
            signed_digest=payload["digest"],
            signed_by={"principal": d.get("decided_by"), "name": name, "via": d.get("decided_via")},
        )
        return f"signed by {name}"
    allowed = {"suspend": ("in_force",), "lift": ("suspended",), "revoke": ("in_force", "suspended")}[action]
    if record.state not in allowed:
        return f"not done: the grant is {record.state}"
    if action == "suspend":
        value.update(state="suspended", stopped_because=d.get("decision_note") or f"suspended by {name}")
    elif action == "lift":
        value.update(state="in_force", stopped_because=None)
    else:
        value.update(state="revoked")
    return f"{action} by {name}"

"""``GrantDesk``: standing grants on the host — kept in the store, judged before an approval is opened.

Before a call would open an approval (a ``confirm=`` or ``verify=`` gate, or the gate of a tool whose
effect is undeclared or mutating), the pipeline's ``standing`` step asks the desk. The desk hands
:meth:`StandingJudge.among <milpa_chat.grants.StandingJudge.among>` every grant it keeps that
lends to the caller's seat (the caller's principal) and covers the operation:

* a grant lends the call: it runs without a card, and its result's meta, its audit line and the audit
  trail (when one is attached) cite the grant and the receipts it ran on; the grant's use count grows
  in the same compare-and-set that checks the grant did not change since it was judged;
* a stop (a suspended grant, a record that does not read): the call is refused with the judge's
  sentence, which names the way out;
* any other refusal, or nobody's call: the call goes on to its approval, as if no grant existed.

Grants are written only by decisions of people (:mod:`milpa_chat.grants.changes`): no tool,
and no argument of one, creates, widens, lifts or signs a grant.

Measurements are taken from the calls themselves: a run of a known operation that changes nothing
records a :class:`~milpa_chat.grants.ConditionReceipt` when its result says whether it holds
(``True``/``False``, or ``{"holds": true|false}``) on content it can name, and is a sign of life for
any falsifier it watches (receipts and watchers are matched to grants when a call is judged). The
desk knows an operation's content and effect from the :class:`~milpa_chat.command.Operation` given to
:meth:`GrantDesk.know`; a tool it does not know cannot say its content, so nothing is lent to it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import TYPE_CHECKING, Any

from milpa_chat.command.canonical import Canonical
from milpa_chat.command.effects import EffectProfile
from milpa_chat.command.ids import OperationId
from milpa_chat.grants.calls import StandingCall
from milpa_chat.grants.changes import GrantChanges, conversation_of
from milpa_chat.grants.document import StandingGrant
from milpa_chat.grants.errors import InvalidGrant
from milpa_chat.grants.judge import StandingJudge, StandingVerdict
from milpa_chat.grants.receipts import ConditionReceipt
from milpa_chat.grants.records import (
    COLLECTION,
    RECEIPTS,
    WATCH,
    GrantOffer,
    GrantRecord,
    kept_receipts,
    receipt_key,
    standing_of,
    watch_key,
    when,
)
from milpa_chat.grants.rules import is_operation_name
from milpa_chat.grants.standing import GrantStanding
from milpa_chat.runtime.caps import Cap
from milpa_chat.runtime.services import StandingAnswer

if TYPE_CHECKING:
    from milpa_chat.command.atom import Operation
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.definition import ToolDefinition
    from milpa_chat.runtime.pipeline import Call
    from milpa_chat.runtime.registry import ToolRegistry
    from milpa_chat.runtime.result import ToolResult

__all__ = ["GrantDesk", "GrantOffer", "Judged"]

log = logging.getLogger("milpa_chat.grants")


#: How many times a loan is judged again when its grant changed meanwhile (each lost race is another
#: call's use counted, so concurrent calls of one grant all get through within as many tries as there are calls).
LEND_ATTEMPTS = 64


@dataclass(frozen=True, slots=True)
class Judged:
    """The answer for one call, and the grant records it was read from (by id, at their version)."""

    verdict: StandingVerdict | None
    versions: Mapping[str, int]


@dataclass(slots=True)
class _Facts:
    pairs: list[tuple[StandingGrant, GrantStanding]]
    records: dict[str, GrantRecord]
    fault: str | None


class GrantDesk(GrantChanges):
    """The standing grants of ``registry`` (``registry.grants``), in the registry's store.

    ``signer_scopes``: who may sign, lift, suspend or revoke (one of these scopes). ``four_eyes``:
    the person who drafted a grant may not sign it (default; a draft may say otherwise).
    ``expires_in``: seconds a signature (or a lift) may wait for its decision.
    ``max_drafts_per_principal``: how many drafts one person may have waiting for a signature at once
    (``None``: no cap); one more is refused with code ``RATE_LIMITED``.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        signer_scopes: Sequence[str] = ("grants:sign",),
        four_eyes: bool = True,
        expires_in: float = 86400.0,
        watch_retention: float = 30 * 86400.0,
        max_drafts_per_principal: int | None = 20,
    ) -> None:
        if isinstance(signer_scopes, str) or not all(isinstance(s, str) and s for s in signer_scopes):
            raise TypeError(f"GrantDesk(signer_scopes=...) takes a list of scope names, got {signer_scopes!r}")
        self.registry = registry
        self.store = registry.store
        self.approvals = registry.approvals
        self.signer_scopes = tuple(signer_scopes)
        self.four_eyes = bool(four_eyes)
        self.expires_in = float(expires_in)
        self.draft_cap = Cap(self.store, "standing-grant drafts", max_drafts_per_principal, "max_drafts_per_principal")
        if not watch_retention > 0:
            raise ValueError(f"GrantDesk(watch_retention=...) is a number of seconds above 0, got {watch_retention!r}")
        self.watch_retention = float(watch_retention)
        self.operations: dict[str, Operation] = {}
        self.offers: dict[str, GrantOffer] = {}
        self._digests: dict[str, str | None] = {}
        self._init_changes()
        registry.grants = self
        from milpa_chat.runtime.pipeline import standing, verify_gate

        if standing not in registry.steps:
            at = registry.steps.index(verify_gate) if verify_gate in registry.steps else len(registry.steps) - 1
            registry.steps.insert(at, standing)
        registry.dispatcher.subscribe("tool.executed", self._measured)

    # ------------------------------------------------------------------ the operations it knows
    def know(self, *operations: Operation, offer: GrantOffer | None = None) -> GrantDesk:
        """Say what ``operations`` act on and what they may do (their ``acts_on`` and effects).

        With ``offer``, an approver's card for a call of one of them offers "Always allow…", which
        drafts a grant of these parts.
        """
        from milpa_chat.command.atom import Operation

        for operation in operations:
            if not isinstance(operation, Operation):
                raise TypeError(f"GrantDesk.know takes Operation objects, got {type(operation).__name__}")
            key = operation.id.canonical
            self.operations[key] = operation
            self._digests.pop(key, None)
            if offer is not None:
                if not isinstance(offer, GrantOffer):
                    raise TypeError(f"GrantDesk.know(offer=...) takes a GrantOffer, got {type(offer).__name__}")
                self.offers[key] = offer
        return self

    def operation_of(self, tool: ToolDefinition | str) -> Operation | None:
        """The operation behind ``tool`` (a definition or a tool name), when the desk knows it."""
        name = tool if isinstance(tool, str) else str(tool.extra.get("operation_name") or tool.name)
        try:
            return self.operations.get(OperationId(name).canonical)
        except (TypeError, ValueError):
            return None

    # ------------------------------------------------------------------ reading
    async def get(self, grant_id: str) -> GrantRecord | None:
        if not isinstance(grant_id, str) or not grant_id or len(grant_id) > 200:
            return None
        rec = await self.store.get(COLLECTION, grant_id)
        return None if rec is None else GrantRecord(rec.key, dict(rec.value), rec.version)

    async def listing(self, *, state: str | None = None) -> list[GrantRecord]:
        """Every stored grant (drafts too), by id — with any change decided elsewhere (another process,
        ``milpa-chat approvals approve``) and not yet written into its grant applied first."""
        records = [GrantRecord(r.key, dict(r.value), r.version) for r in await self.store.scan(COLLECTION)]
        if any(await asyncio.gather(*(self._settled(r) for r in records if r.pending))):
            records = [GrantRecord(r.key, dict(r.value), r.version) for r in await self.store.scan(COLLECTION)]
        return [r for r in records if state is None or r.state == state]

    async def _settled(self, record: GrantRecord) -> bool:
        applied = False
        for approval_id in record.pending:
            approval = await self.approvals.get(approval_id)
            if approval is not None and approval.state != "pending":
                applied = await self.apply(approval) is not None or applied
        return applied

    async def receipts(self) -> list[ConditionReceipt | None]:
        """The receipts kept, in the order they were taken (``None`` for a row that does not read): one per
        content, operation and "no", and per content, operation, instrument and arguments for a green —
        what the judge would read from every measurement ever taken (see :mod:`milpa_chat.grants.records`)."""
        return kept_receipts([r.value for r in await self.store.scan(RECEIPTS)])

    async def _facts(self, call: StandingCall, conversation: str | None = None) -> _Facts:
        """The grants that lend to the call's seat and cover its operation, with their facts; a kept text
        that does not read is a fault of the whole record (it may be the one that names the call)."""
        records = {r.id: r for r in await self.listing() if r.judged}
        documents: dict[str, StandingGrant] = {}
        fault: str | None = None
        for record in records.values():
            try:
                grant = record.document()
            except (InvalidGrant, TypeError, ValueError) as exc:
                fault = f"the kept text of grant {Canonical.shown(record.id)} does not read: {exc}"
                continue
            lends_in = record.data.get("lends_in")
            if lends_in is not None and lends_in != conversation:  # a grant kept to one chat (a mode's loosening)
                continue
            if grant.lends_to(call.seat) and grant.covers(call.operation):
                documents[record.id] = grant
        if not documents:
            return _Facts([], records, fault)
        receipts = await self.receipts()
        watch = [r.value for r in await self.store.scan(WATCH)]
        pairs = [(g, standing_of(records[k], g, receipts, watch, self._instruments(g))) for k, g in documents.items()]
        return _Facts(pairs, records, fault)

    def _instrument(self, operation: Operation) -> str | None:
        """Today's instrument digest of ``operation`` (read from its source once a process, then kept)."""
        key = operation.id.canonical
        if key not in self._digests:
            self._digests[key] = operation.instrument_digest()
        return self._digests[key]

    def _instruments(self, grant: StandingGrant) -> dict[str, str]:
        out: dict[str, str] = {}
        for condition in grant.conditions:
            operation = self.operations.get(condition.by.id.canonical)
            digest = None if operation is None else self._instrument(operation)
            if digest is not None:
                out[condition.by.operation] = digest
        return out

    def call_of(self, tool: ToolDefinition | str, wire: Mapping[str, Any], ctx: ToolContext) -> StandingCall | None:
        """The call as facts (``None`` for a caller with no principal — no seat — or a tool whose name no
        grant can cover, such as ``notes__delete``: nothing to lend, nothing to stop). ``tool``: a
        definition, or the name of a tool the kit does not run itself (an agent framework's)."""
        if not ctx.principal:
            return None
        now = when(self.store.clock())
        operation = self.operation_of(tool)
        if operation is not None:
            return StandingCall.of(operation, wire, ctx.principal, now=now)
        name = tool if isinstance(tool, str) else str(tool.extra.get("operation_name") or tool.name)
        if not is_operation_name(name):  # e.g. notes__delete: no grant covers it, nor may be naming it
            return None
        return StandingCall(name, wire, ctx.principal, content=None, effect=EffectProfile.unclassified(), now=now)

    async def judge(self, tool: ToolDefinition | str, wire: Mapping[str, Any], ctx: ToolContext) -> Judged:
        """What the grants kept say of calling ``tool`` with ``wire`` as ``ctx`` (nothing is written)."""
        call = self.call_of(tool, wire, ctx)
        if call is None:
            return Judged(None, {})
        facts = await self._facts(call, conversation_of(ctx))
        if not facts.pairs and facts.fault is None:
            return Judged(None, {})
        verdict = StandingJudge.among(facts.pairs, call, record_fault=facts.fault)
        return Judged(verdict, {k: r.version for k, r in facts.records.items()})

    # ------------------------------------------------------------------ the pipeline's step
    async def gate(self, call: Call) -> ToolResult | None:
        """Lend the call, refuse it on a stop, or hand it on (``None``) to its approval."""
        from milpa_chat.runtime import gates
        from milpa_chat.runtime.result import ErrorCode

        verdict = await self._verdict(call.tool, call.validated.wire, call.ctx)
        if verdict is None:
            return None
        if verdict.passes():
            return await self._lend(call, verdict)
        grant = None if verdict.grant is None else verdict.grant.id
        call.services.audit.denied(call.ctx, call.tool.name, verdict.sentence)
        return gates.fail(
            call.tool.name,
            call.ctx,
            call.t0,
            ErrorCode.FORBIDDEN,
            verdict.sentence,
            None,
            standing_grant=grant,
            standing_check=verdict.failed.label if verdict.failed else None,
        )

    # ------------------------------------------------------------------ calls the kit does not run
    async def consult(self, tool: str, args: Mapping[str, Any], ctx: ToolContext) -> StandingAnswer | None:
        """What the grants say of ``tool(**args)`` that the kit does not run itself — an agent framework's
        tool, proposed by its model for the person of ``ctx`` (:class:`~milpa_chat.agents.ApprovalHost`):

        * lent: the grant's use is counted (in the compare-and-set that checks it did not change since it was
          judged) and the audit log cites it; the caller records the call as allowed and runs it once;
        * stopped (a suspended grant, a record that does not read): refused with the judge's sentence;
        * ``None``: the call goes to its approval, as if no grant existed.

        ``tool`` is the operation's name in any spelling (``send_payment`` is ``send:payment``); only an
        operation :meth:`know` was told of can say what a call acts on, so only such a call is ever lent."""
        if not isinstance(tool, str) or not isinstance(args, Mapping):
            raise TypeError(
                f"GrantDesk.consult takes a tool name and its arguments (an object), got {type(tool).__name__} "
                f"and {type(args).__name__}"
            )
        verdict = await self._verdict(tool, args, ctx)
        if verdict is None:
            return None
        grant = None if verdict.grant is None else verdict.grant.id
        if verdict.passes():
            cited = _cited(verdict)
            self._audit_lent(ctx, tool, str(grant), cited)
            return StandingAnswer(True, grant, verdict.sentence, tuple(cited))
        self.registry.audit.denied(ctx, tool, verdict.sentence)
        return StandingAnswer(False, grant, verdict.sentence, check=verdict.failed.label if verdict.failed else None)

    async def _verdict(
        self, tool: ToolDefinition | str, wire: Mapping[str, Any], ctx: ToolContext
    ) -> StandingVerdict | None:
        """The verdict to act on: a pass whose use was counted, a stop, or ``None`` (the approval)."""
        name = tool if isinstance(tool, str) else tool.name
        for _ in range(LEND_ATTEMPTS):  # a grant that changed between judging and lending is judged again
            judged = await self.judge(tool, wire, ctx)
            verdict = judged.verdict
            if verdict is None:
                return None
            if verdict.passes():
                assert verdict.grant is not None
                if await self._count_use(verdict.grant.id, judged.versions.get(verdict.grant.id)):
                    return verdict
                continue
            if verdict.stopped:
                return verdict
            log.info("standing grants do not lend %s to %s: %s", name, ctx.principal, verdict.sentence)
            return None
        log.info(
            "standing grants: %s for %s changed on every one of %d tries; it goes to its approval",
            name,
            ctx.principal,
            LEND_ATTEMPTS,
        )
        return None

    async def _count_use(self, grant_id: str, version: int | None) -> bool:
        record = await self.get(grant_id)
        if record is None or version is None or record.version != version or record.state != "in_force":
            return False
        value = {**record.data, "uses": record.uses + 1, "last_used_at": self.store.clock()}
        return await self.store.update(COLLECTION, grant_id, value, expected_version=version) is not None

    async def _lend(self, call: Call, verdict: StandingVerdict) -> ToolResult:
        from milpa_chat.runtime.execute import execute

        assert verdict.grant is not None
        grant_id = verdict.grant.id
        cited = _cited(verdict)
        self._audit_lent(call.ctx, call.tool.name, grant_id, cited)
        trail = call.services.trail
        if trail is not None:
            try:
                await trail.append(
                    "lent",
                    call.tool.name,
                    {
                        "principal": call.ctx.principal,
                        "grant": grant_id,
                        "receipts": [f"{r['operation']}@{r['content']}" for r in cited],
                    },
                )
            except Exception:  # the call stands on its grant; a gap in the trail is what verify reports
                log.exception("the audit trail could not record the call lent by grant %s", grant_id)
        t_lent = perf_counter()
        result = await execute(call)
        log.debug("grant %s lent %s (%.1f ms)", grant_id, call.tool.name, (perf_counter() - t_lent) * 1000)
        return result.with_meta(standing_grant=grant_id, standing_receipts=cited, standing_sentence=verdict.sentence)

    def _audit_lent(self, ctx: ToolContext, tool: str, grant_id: str, cited: list[dict[str, Any]]) -> None:
        audit = self.registry.audit
        if audit.writes(logging.INFO):
            audit.logger.info(
                "[GrantAudit] %s | lent | %s | %s | grant=%s | receipts=%s",
                ctx.request_id,
                tool,
                ctx.principal,
                grant_id,
                ",".join(f"{r['operation']}@{r['content']}" for r in cited),
            )

    # ------------------------------------------------------------------ measurements
    async def _measured(self, _name: str, payload: Mapping[str, Any]) -> None:
        event = payload["event"]
        if getattr(event, "cache_served", False) or not event.result.success:
            return
        operation = self.operation_of(event.name)
        if operation is None:
            return
        await self.measure(operation, event.args, event.result.data)

    async def measure(self, operation: Operation, arguments: Mapping[str, Any], data: Any) -> None:
        """Keep what a finished run of a known operation that changes nothing says: a receipt when its result
        says whether it holds (``True``/``False``, or ``{"holds": ...}``) on content it can name, and a sign
        of life (for the falsifiers it may watch). Runs of operations that may change things are not kept."""
        if operation.may_mutate:
            return
        at = self.store.clock()
        holds = data if isinstance(data, bool) else (data.get("holds") if isinstance(data, Mapping) else None)
        content, instrument = operation.content_of(arguments), self._instrument(operation)
        if isinstance(holds, bool) and content is not None and instrument is not None:
            receipt = ConditionReceipt(operation.name, dict(arguments), content, instrument, holds, at=when(at))
            # A "no" lost on a power cut would let an older green speak again, so it is durable; a lost
            # green or sign of life only leaves an older one (or none), which can only make grants refuse.
            await self.store.put(
                RECEIPTS, receipt_key(receipt), {"receipt": receipt.to_dict(), "taken": at}, durable=not holds
            )
        await self.store.put(
            WATCH,
            watch_key(operation.name, arguments),
            {"operation": operation.name, "arguments": dict(arguments), "at": at},
            ttl=self.watch_retention,
            durable=False,
        )


def _cited(verdict: StandingVerdict) -> list[dict[str, Any]]:
    """The receipts a loan ran on, as a result's meta, the audit and an approval record cite them."""
    return [
        {
            "operation": r.operation,
            "content": r.content,
            "instrument": r.instrument,
            "holds": r.holds,
            "at": None if r.at is None else r.at.isoformat(),
        }
        for r in verdict.cited
    ]

"""``StandingJudge``: whether a standing grant lends one call — seven checks, in order; the first that fails decides.

=====  ============  =====================================================================================
 1     named         the grant does not name this operation, these arguments and this seat
 2     signature     the signature does not hold now, or the grant's record does not read whole
 3     in_force      suspended, superseded, revoked, or past its own date
 4     watched       the falsifier's watcher gave no sign of life within its window
 5     subject       the operation cannot say what content the call acts on
 6     ceiling       the call's effect is wider than the ceiling (``EffectProfile.is_no_wider_than``)
 7     conditions    a condition has no green on this content from today's instrument, or its last receipt says no
=====  ============  =====================================================================================

The judgment is pure: it reads the grant, the host's facts and the call (whose ``now`` is the clock),
and never grants, widens or restores anything. :meth:`StandingJudge.among` says which answer stands
when a house holds several grants: shrinking wins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from functools import partial
from typing import Any

from milpa_chat.command.canonical import Canonical
from milpa_chat.command.levels import AXES
from milpa_chat.grants.calls import NamedCall, StandingCall
from milpa_chat.grants.document import StandingGrant, entries_over
from milpa_chat.grants.receipts import ConditionReceipt, Measured, read_condition
from milpa_chat.grants.rules import fixable, same_value, spell_expiry
from milpa_chat.grants.standing import GrantStanding, GrantState

__all__ = ["StandingCheck", "StandingJudge", "StandingVerdict"]


class StandingCheck(IntEnum):
    """The seven checks, numbered in the order they are asked; ``label`` is the name they are filed under."""

    NAMED = 1
    SIGNATURE = 2
    IN_FORCE = 3
    WATCHED = 4
    SUBJECT = 5
    CEILING = 6
    CONDITIONS = 7

    @property
    def label(self) -> str:
        """``named``, ``signature``, ``in_force``, ``watched``, ``subject``, ``ceiling`` or ``conditions``."""
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class StandingVerdict:
    """An answer about one call.

    ``failed`` is the check that refused (``None`` when it passes), ``sentence`` says why for the
    reader, ``cited`` are the receipts a pass ran on (one green per condition, in condition order),
    ``grant`` the grant it speaks for (``None`` for a whole-record fault). ``stopped`` says the
    refusal is a stop (a suspension, or a record that does not read) rather than a grant that just
    does not lend; ``stopped_beside`` that the stopped grant only *may be* naming the call.
    """

    failed: StandingCheck | None
    sentence: str
    cited: tuple[ConditionReceipt, ...] = ()
    grant: StandingGrant | None = None
    stopped: bool = False
    stopped_beside: bool = False

    def named(self) -> bool:
        """Whether the grant names this call as it is spelled (``False`` also for a record-wide fault)."""
        return self.grant is not None and self.failed is not StandingCheck.NAMED and not self.stopped_beside

    def passes(self) -> bool:
        """Whether every check held: the call is lent, citing ``cited``."""
        return self.failed is None

    def to_dict(self) -> dict[str, Any]:
        """What a result or an audit line cites: the check, the sentence, the grant (id and digest), the receipts."""
        return {
            "failed": None if self.failed is None else self.failed.label,
            "sentence": self.sentence,
            "grant": None if self.grant is None else self.grant.id,
            "grant_digest": None if self.grant is None else self.grant.digest(),
            "cited": [receipt.to_dict() for receipt in self.cited],
            "stopped": self.stopped,
            "stopped_beside": self.stopped_beside,
        }


def _who(grant: StandingGrant) -> str:
    return f"standing grant {Canonical.shown(grant.id)}"


def _fixes(entries: Sequence[NamedCall]) -> str:
    spelled = [
        ", ".join(f"{name}={Canonical.shown(value)}" for name, value in entry.arguments.items()) for entry in entries
    ]
    return " or ".join(f"({s})" for s in spelled if s) or "(nothing)"


def _way_out(grant: StandingGrant, standing: GrantStanding) -> str:
    if not standing.reads_whole:
        return "it is out of the way when its record reads again (superseding leaves it where it was)"
    return f"a person lifts the suspension, or signs a grant that supersedes {Canonical.shown(grant.id)} by name"


# ------------------------------------------------------------------ the seven checks
def _named(grant: StandingGrant, call: StandingCall) -> str | None:
    if not grant.lends_to(call.seat):
        return f"{_who(grant)} does not lend to seat {Canonical.shown(call.seat)}"
    entries = entries_over(grant, call.operation)
    if not entries:
        return f"{_who(grant)} does not cover {Canonical.short(call.operation)}"
    if not any(entry.matches(call) for entry in entries):
        return (
            f"{_who(grant)} covers {Canonical.short(call.operation)} only with {_fixes(entries)}, "
            f"and this call does not carry that"
        )
    return None


def _signature(grant: StandingGrant, standing: GrantStanding) -> str | None:
    if standing.signature_fault is not None:
        return f"the signature of {_who(grant)} does not hold: {Canonical.said(standing.signature_fault)}"
    if standing.record_fault is not None:
        return (
            f"the record of {_who(grant)} does not read whole: {Canonical.said(standing.record_fault)}; "
            f"{_way_out(grant, standing)}"
        )
    if standing.unread is not None:
        return (
            f"the receipts of {_who(grant)} hold something that is not a receipt (item {standing.unread}), so its "
            f"record does not read whole; {_way_out(grant, standing)}"
        )
    return None


def _in_force(grant: StandingGrant, standing: GrantStanding, call: StandingCall) -> str | None:
    if standing.state is GrantState.SUSPENDED:
        reason = Canonical.said(standing.stopped_because) if standing.stopped_because else "no reason was given"
        return f"{_who(grant)} is suspended: {reason}; {_way_out(grant, standing)}"
    if standing.state is GrantState.SUPERSEDED:
        return f"{_who(grant)} is superseded by a later grant"
    if standing.state is GrantState.REVOKED:
        return f"{_who(grant)} was revoked"
    if grant.expired(call.now):
        assert grant.expires_at is not None
        return f"{_who(grant)} expired at {spell_expiry(grant.expires_at)}"
    return None


def _watched(grant: StandingGrant, standing: GrantStanding, call: StandingCall) -> str | None:
    falsifier = grant.falsifier
    watcher = f"the falsifier {Canonical.shown(falsifier.name)} of {_who(grant)} is watched by " + Canonical.short(
        falsifier.by.operation
    )
    seen = standing.falsifier_seen_at
    if seen is None:
        return f"{watcher}, which gave no sign of life"
    if seen > call.now:
        return f"{watcher}, whose last sign of life is in the future ({seen.isoformat()}), which does not count"
    if (call.now - seen).total_seconds() > falsifier.window:
        return f"{watcher}, last seen {seen.isoformat()}, longer ago than its window of {falsifier.window} seconds"
    return None


def _subject(call: StandingCall) -> str | None:
    if call.content is None:
        operation = Canonical.short(call.operation)
        return f"{operation} cannot say what content this call acts on, so nothing measured speaks for it"
    return None


def _ceiling(grant: StandingGrant, call: StandingCall) -> str | None:
    if call.effect.is_no_wider_than(grant.ceiling):
        return None
    wider = [
        f"{axis} {mine.value} above {theirs.value}"
        for axis, mine, theirs in zip(AXES, call.effect.axes, grant.ceiling.axes, strict=True)
        if mine.rank > theirs.rank
    ]
    return f"this call's effect is wider than the ceiling of {_who(grant)}: {', '.join(wider)}"


def _conditions(
    grant: StandingGrant, standing: GrantStanding, content: str
) -> tuple[str | None, tuple[ConditionReceipt, ...]]:
    receipts = standing.valid_receipts()
    cited: list[ConditionReceipt] = []
    on = f"content {Canonical.shown(content)}"
    for condition in grant.conditions:
        reading = read_condition(condition.by, content, receipts, standing.instrument(condition.by.operation))
        name = f"condition {Canonical.shown(condition.name)}"
        if reading.measured is Measured.SAYS_NO:
            return f"{name}: its last receipt on {on} says no", ()
        if reading.measured is Measured.NO_INSTRUMENT:
            return (
                f"{name} was never measured: the host gave no instrument digest today for "
                f"{Canonical.short(condition.by.operation)}, so no green counts",
                (),
            )
        if reading.measured is Measured.NEVER_MEASURED:
            return f"{name} was never measured on {on} by the run it describes, with today's instrument", ()
        assert reading.receipt is not None
        cited.append(reading.receipt)
    return None, tuple(cited)


def _check_inputs(grant: object, standing: object, call: object) -> None:
    for value, kind, what in ((grant, StandingGrant, "grant"), (standing, GrantStanding, "standing"),
                              (call, StandingCall, "call")):  # fmt: skip
        if not isinstance(value, kind):
            raise TypeError(f"StandingJudge: {what} takes a {kind.__name__}, got {type(value).__name__}")


def _beyond_doubt_another(fixed: str | int | bool, carried: object) -> bool:
    """The call says, beyond doubt, another value: same kind, writable as a fixed value, and different."""
    return type(carried) is type(fixed) and fixable(carried) and not same_value(carried, fixed)


class StandingJudge:
    """Pure functions: :meth:`judge` one grant, :meth:`among` several, :meth:`may_be_naming` for a stop's reach."""

    __slots__ = ()

    @staticmethod
    def judge(grant: StandingGrant, standing: GrantStanding, call: StandingCall) -> StandingVerdict:
        """The seven checks in order; the first that fails is the verdict (see the module's table).

        A not-named verdict (``failed is StandingCheck.NAMED``) means the call is judged as it was
        before any grant existed. judge() never answers a stop *beside* the call; a host that lets
        "not named" fall through to what the seat holds on its own asks :meth:`may_be_naming` too.
        """
        _check_inputs(grant, standing, call)
        stopped = standing.stopped
        refusal = _named(grant, call)
        if refusal is not None:
            return StandingVerdict(StandingCheck.NAMED, refusal, grant=grant)
        steps: tuple[tuple[StandingCheck, Callable[[], str | None]], ...] = (
            (StandingCheck.SIGNATURE, partial(_signature, grant, standing)),
            (StandingCheck.IN_FORCE, partial(_in_force, grant, standing, call)),
            (StandingCheck.WATCHED, partial(_watched, grant, standing, call)),
            (StandingCheck.SUBJECT, partial(_subject, call)),
            (StandingCheck.CEILING, partial(_ceiling, grant, call)),
        )
        for check, ask in steps:
            refusal = ask()
            if refusal is not None:
                return StandingVerdict(check, refusal, grant=grant, stopped=stopped)
        assert call.content is not None
        refusal, cited = _conditions(grant, standing, call.content)
        if refusal is not None:
            return StandingVerdict(StandingCheck.CONDITIONS, refusal, grant=grant)
        sentence = (
            f"{_who(grant)} lends this call: every check held on content {Canonical.shown(call.content)}, "
            f"citing {len(cited)} receipt{'s' if len(cited) != 1 else ''}"
        )
        return StandingVerdict(None, sentence, cited=cited, grant=grant)

    @staticmethod
    def may_be_naming(grant: StandingGrant, call: StandingCall) -> bool:
        """Whether the grant may be naming the call: not excluded, beyond doubt, by every entry over its operation.

        ``False`` when the grant does not lend to the seat or has no entry over the operation.
        Otherwise ``False`` only if, for every such entry, the call says beyond doubt another value
        for one thing that entry fixes — carried, of the same kind (text, whole number, true/false),
        written the way a grant can fix it, and different. Anything else is doubt: an absent key,
        ``None``, ``""``, spaces around, another kind, a fraction, a list, an object.
        """
        if not isinstance(grant, StandingGrant) or not isinstance(call, StandingCall):
            raise TypeError("may_be_naming takes a StandingGrant and a StandingCall")
        if not grant.lends_to(call.seat):
            return False
        entries = entries_over(grant, call.operation)
        if not entries:
            return False
        carried = call.arguments
        return not all(
            any(
                name in carried and _beyond_doubt_another(value, carried[name])
                for name, value in entry.arguments.items()
            )
            for entry in entries
        )

    @staticmethod
    def among(
        entries: Iterable[tuple[StandingGrant, GrantStanding]], call: StandingCall, *, record_fault: str | None
    ) -> StandingVerdict | None:
        """Which answer stands among every grant a host keeps that lends to the seat and covers the operation.

        ``record_fault`` has no default: ``None`` says the host's whole record of standing grants
        reads. Precedence: a record fault refuses everything (no grant, never ``None``) > a stopped
        grant that names the call > a stopped grant that may be naming it (``stopped_beside``) > the
        first grant that passes > the refusal that got furthest > ``None`` ("nobody's call").
        """
        if record_fault is not None and type(record_fault) is not str:
            raise TypeError(f"among: record_fault is None or the host's reason (a text), got {record_fault!r}")
        if record_fault is not None:
            sentence = (
                f"the record of standing grants does not read whole: {Canonical.said(record_fault)}; nothing is "
                f"lent to any seat until it reads again (superseding leaves it where it was)"
            )
            return StandingVerdict(StandingCheck.SIGNATURE, sentence, stopped=True)
        pairs = list(entries)
        for pair in pairs:
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise TypeError(f"among: entries are (StandingGrant, GrantStanding) pairs, got {pair!r}")
            _check_inputs(pair[0], pair[1], call)
        relevant = [(g, s) for g, s in pairs if g.lends_to(call.seat) and g.covers(call.operation)]
        verdicts = [(g, s, StandingJudge.judge(g, s, call)) for g, s in relevant]
        for _, standing, verdict in verdicts:
            if standing.stopped and verdict.named():
                return verdict
        for grant, standing, _verdict in verdicts:
            if standing.stopped and StandingJudge.may_be_naming(grant, call):
                return _beside(grant, standing, call)
        for _, _, verdict in verdicts:
            if verdict.passes():
                return verdict
        refusals = [verdict for _, _, verdict in verdicts if verdict.named()]
        if not refusals:
            return None
        furthest = max(verdict.failed or 0 for verdict in refusals)
        return next(verdict for verdict in refusals if verdict.failed == furthest)


def _beside(grant: StandingGrant, standing: GrantStanding, call: StandingCall) -> StandingVerdict:
    reads = standing.reads_whole
    entries = entries_over(grant, call.operation)
    if reads:
        reason = Canonical.said(standing.stopped_because) if standing.stopped_because else "no reason was given"
        kind = f"is suspended ({reason})"
    elif standing.record_fault is not None:
        kind = f"has a record that does not read whole ({Canonical.said(standing.record_fault)})"
    else:
        kind = f"has a record that does not read whole (item {standing.unread} of its receipts is not a receipt)"
    sentence = (
        f"{_who(grant)} {kind} and may be naming this call: it fixes {_fixes(entries)} over "
        f"{Canonical.short(call.operation)}, and this call does not say, beyond doubt, another value; "
        f"{_way_out(grant, standing)}"
    )
    check = StandingCheck.IN_FORCE if reads else StandingCheck.SIGNATURE
    return StandingVerdict(check, sentence, grant=grant, stopped=True, stopped_beside=True)

"""``EffectProfile``: what an operation can do at worst, on five axes.

A profile is a ceiling, declared by the operation: arguments may only bring it down for one call
(:meth:`EffectProfile.compose_for_call`), never up. Profiles form a lattice: :meth:`~EffectProfile.join`
takes the wider level of every axis (several interpretations of one request, a step that runs
several operations), :meth:`~EffectProfile.meet` the narrower one (a person tightening a ceiling),
and :meth:`~EffectProfile.is_no_wider_than` is the one comparator.

Every profile that can be built is one somebody could honestly declare: the constructor refuses a
read that claims a subject, a promise to undo what changes nothing, a mutation that says undoing does
not apply, and a ``guaranteed`` reversibility that does not *name* the operation that undoes it.

The profile and what lowers it for one call name each other, so they live here together: a
:class:`Descent`, the :class:`ProfileComposition` a call carries and :func:`compose`, over the call's
evidence (:mod:`milpa_chat.command.evidence`) and its certificates (:mod:`milpa_chat.command.certificates`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, replace
from typing import Any, TypeVar

from milpa_chat.command._json import identical
from milpa_chat.command.certificates import DescentCertificate
from milpa_chat.command.errors import InvalidEffectProfile
from milpa_chat.command.evidence import TRIAL_WORKSPACE, AxisReduction, CallSubject, ContextFacts
from milpa_chat.command.ids import OperationId, names_an_operation, trim_ascii
from milpa_chat.command.levels import AXES, Authority, Externality, Level, Mutation, Reversibility, Subject, level_of

__all__ = ["Descent", "EffectProfile", "ProfileComposition"]

L = TypeVar("L", bound=Level)
_AXIS_TYPES: dict[str, type[Level]] = {
    "mutation": Mutation,
    "externality": Externality,
    "reversibility": Reversibility,
    "authority": Authority,
    "subject": Subject,
}


def _wider(a: L, b: L) -> L:
    return a if a.rank >= b.rank else b


def _narrower(a: L, b: L) -> L:
    return a if a.rank <= b.rank else b


def _names(value: Any, what: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise InvalidEffectProfile(f"EffectProfile({what}=...) takes a list of argument names, got {value!r}")
    items = tuple(value)
    if not all(isinstance(v, str) for v in items):
        raise InvalidEffectProfile(f"EffectProfile({what}=...) takes argument names (strings), got {value!r}")
    return items


def _union(a: Sequence[str], b: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*a, *b)))


@dataclass(frozen=True, slots=True)
class EffectProfile:
    """The effect ceiling of an operation. Every axis defaults to ``unknown`` (the top).

    ``escalates_on`` names the arguments whose value can raise the ceiling (while one is unresolved
    the ceiling stays where it is); ``rollback_contract`` names the operation that undoes this one
    (required for ``guaranteed``); ``descents`` are the arguments that may lower it for one call.
    Levels may be given as members (``Mutation.PERSISTENT``) or as their strings (``"persistent"``).
    """

    mutation: Mutation = Mutation.UNKNOWN
    externality: Externality = Externality.UNKNOWN
    reversibility: Reversibility = Reversibility.UNKNOWN
    authority: Authority = Authority.UNKNOWN
    _: KW_ONLY
    escalates_on: Sequence[str] = ()
    subject: Subject = Subject.UNKNOWN
    rollback_contract: str | None = None
    descents: Sequence[Descent] = ()

    def __post_init__(self) -> None:
        for axis, kind in _AXIS_TYPES.items():
            object.__setattr__(self, axis, level_of(kind, getattr(self, axis), what=axis))
        object.__setattr__(self, "escalates_on", _names(self.escalates_on, "escalates_on"))
        if self.rollback_contract is not None and not isinstance(self.rollback_contract, str):
            raise InvalidEffectProfile(
                f"EffectProfile(rollback_contract=...) names an operation (a string), got {self.rollback_contract!r}"
            )
        self._check_descents()
        self._check_invariants()

    def _check_descents(self) -> None:
        if isinstance(self.descents, Descent) or not isinstance(self.descents, Iterable):
            raise InvalidEffectProfile(f"EffectProfile(descents=...) takes a list of Descent, got {self.descents!r}")
        descents = tuple(self.descents)
        if not all(isinstance(d, Descent) for d in descents):
            raise InvalidEffectProfile(f"EffectProfile(descents=...) takes Descent objects, got {self.descents!r}")
        object.__setattr__(self, "descents", descents)

    def _check_invariants(self) -> None:
        changes_nothing = self.mutation is Mutation.NONE
        if changes_nothing and self.subject not in (Subject.NONE, Subject.UNKNOWN):
            raise InvalidEffectProfile(
                f"An operation that changes nothing cannot declare a subject (got subject {self.subject.value!r} "
                f"with mutation 'none'): declare the mutation it performs, or subject 'none'"
            )
        if changes_nothing and self.reversibility is Reversibility.GUARANTEED:
            raise InvalidEffectProfile(
                "An operation that changes nothing cannot promise to undo it: declare reversibility "
                "'not_applicable' (EffectProfile.read_only() does), not 'guaranteed'"
            )
        if not changes_nothing and self.reversibility is Reversibility.NOT_APPLICABLE:
            raise InvalidEffectProfile(
                f"An operation with mutation {self.mutation.value!r} cannot say undoing does not apply: "
                f"declare how it is undone (guaranteed, compensatable, manual_recovery, irreversible or unknown)"
            )
        if self.reversibility is Reversibility.GUARANTEED:
            contract = self.rollback_contract
            if contract is None or trim_ascii(contract) == "":
                raise InvalidEffectProfile(
                    "Reversibility 'guaranteed' requires a rollback contract: name the operation that undoes "
                    "this one, e.g. rollback_contract='posts.unpublish' (or declare 'compensatable')"
                )
            if not names_an_operation(contract):
                raise InvalidEffectProfile(
                    f"The rollback contract {contract!r} describes an inverse instead of naming one: a guarantee "
                    f"names the operation that undoes this one (e.g. 'posts.unpublish'); a note for a person "
                    f"belongs with reversibility 'manual_recovery'"
                )

    # ---------------------------------------------------------------- named profiles
    @classmethod
    def unclassified(cls) -> EffectProfile:
        """Every axis ``unknown``: what an operation that declared nothing can do (anything)."""
        return cls()

    @classmethod
    def read_only(cls) -> EffectProfile:
        """The canonical read: changes nothing, reaches nobody, spends read authority, nothing to undo."""
        return cls(Mutation.NONE, Externality.NONE, Reversibility.NOT_APPLICABLE, Authority.READ, subject=Subject.NONE)

    # ------------------------------------------------------------------------ queries
    @property
    def axes(self) -> tuple[Mutation, Externality, Reversibility, Authority, Subject]:
        """The five levels, in axis order: the profile's place in the lattice."""
        return (self.mutation, self.externality, self.reversibility, self.authority, self.subject)

    def is_fully_classified(self) -> bool:
        """No axis is ``unknown`` (``not_applicable`` is a classification)."""
        return all(level.value != "unknown" for level in self.axes)

    @property
    def mutates(self) -> bool:
        """Whether the ceiling allows any change (``unknown`` does)."""
        return self.mutation is not Mutation.NONE

    def rollback_operation(self) -> OperationId | None:
        """The identity of the operation that undoes this one, when the contract names one (any level)."""
        contract = self.rollback_contract
        if contract is None or not names_an_operation(contract):
            return None
        return OperationId(contract)

    def unresolved_escalators(self, arguments: Mapping[str, Any]) -> list[str]:
        """The ``escalates_on`` names, in order, that are absent, ``None`` or ``""`` in ``arguments``."""
        return [name for name in self.escalates_on if arguments.get(name) is None or arguments[name] == ""]

    def is_no_wider_than(self, other: EffectProfile) -> bool:
        """Whether this profile is at most ``other`` on every axis (the one comparator).

        Levels compare by weight; on reversibility's weight tie ``unknown`` stays above
        ``irreversible`` (not knowing is never the cheap way to look recoverable). Incomparable
        profiles (lower on one axis, higher on another) are not. Escalators, the rollback contract
        and descents do not take part.
        """
        return all(mine.rank <= theirs.rank for mine, theirs in zip(self.axes, other.axes, strict=True))

    # -------------------------------------------------------------------- composition
    def join(self, other: EffectProfile) -> EffectProfile:
        """The least upper bound: the wider level of every axis, whichever side comes first.

        On a weight tie the label that hides nothing wins (``unknown`` over ``irreversible``,
        ``guaranteed`` over ``not_applicable``). The result keeps a rollback contract only while it
        is ``guaranteed``: two guaranteed acts undone by *different* operations join as
        ``compensatable`` with no contract (no one operation undoes both). Descents are not carried.
        """
        mutation = _wider(self.mutation, other.mutation)
        reversibility = _wider(self.reversibility, other.reversibility)
        contract: str | None = None
        if reversibility is Reversibility.GUARANTEED:
            reversibility, contract = self._joined_guarantee(other)
        return EffectProfile(
            mutation,
            _wider(self.externality, other.externality),
            reversibility,
            _wider(self.authority, other.authority),
            escalates_on=_union(self.escalates_on, other.escalates_on),
            subject=_wider(self.subject, other.subject),
            rollback_contract=contract,
        )

    def _joined_guarantee(self, other: EffectProfile) -> tuple[Reversibility, str | None]:
        mine = self.rollback_contract if self.reversibility is Reversibility.GUARANTEED else None
        theirs = other.rollback_contract if other.reversibility is Reversibility.GUARANTEED else None
        if mine is None or theirs is None:
            return Reversibility.GUARANTEED, mine if theirs is None else theirs
        if mine == theirs:
            return Reversibility.GUARANTEED, mine
        if OperationId(mine) == OperationId(theirs):  # one act, two spellings: keep the identity
            return Reversibility.GUARANTEED, OperationId(mine).canonical
        return Reversibility.COMPENSATABLE, None

    def meet(self, other: EffectProfile) -> EffectProfile:
        """The greatest lower bound: the narrower level of every axis; never raises any axis.

        When the result changes nothing it has no subject and promises no undo (those levels are
        clamped to ``none`` / ``not_applicable``, the only lower levels that keep it declarable). A
        ``guaranteed`` result carries the contract of a guaranteed side (this one first).
        """
        mutation = _narrower(self.mutation, other.mutation)
        subject = _narrower(self.subject, other.subject)
        reversibility = _narrower(self.reversibility, other.reversibility)
        if mutation is Mutation.NONE:
            if subject not in (Subject.NONE, Subject.UNKNOWN):
                subject = Subject.NONE
            if reversibility is Reversibility.GUARANTEED:
                reversibility = Reversibility.NOT_APPLICABLE
        contract: str | None = None
        if reversibility is Reversibility.GUARANTEED:
            guaranteed = self if self.reversibility is Reversibility.GUARANTEED else other
            contract = guaranteed.rollback_contract
        return EffectProfile(
            mutation,
            _narrower(self.externality, other.externality),
            reversibility,
            _narrower(self.authority, other.authority),
            escalates_on=_union(self.escalates_on, other.escalates_on),
            subject=subject,
            rollback_contract=contract,
        )

    __or__ = join
    __and__ = meet

    def compose_for_call(self, arguments: Mapping[str, Any], subject: CallSubject | None = None) -> ProfileComposition:
        """The ceiling this call carries and a receipt of who lowered each axis."""
        return compose(self, arguments, subject)

    def for_call(self, arguments: Mapping[str, Any], subject: CallSubject | None = None) -> EffectProfile:
        """Just the effective ceiling of :meth:`compose_for_call`."""
        return self.compose_for_call(arguments, subject).effective

    # -------------------------------------------------------------------- (de)serialise
    def to_dict(self) -> dict[str, Any]:
        """The five axes, ``escalates_on``, ``rollback_contract`` and ``fully_classified`` (descents are not data)."""
        return {
            "mutation": self.mutation.value,
            "externality": self.externality.value,
            "reversibility": self.reversibility.value,
            "authority": self.authority.value,
            "subject": self.subject.value,
            "escalates_on": list(self.escalates_on),
            "rollback_contract": self.rollback_contract,
            "fully_classified": self.is_fully_classified(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EffectProfile:
        """Read a stored profile (the inverse of :meth:`to_dict`). All five axes are required.

        History is read, never rejected, and never cheaper than it was: a stored read that claimed
        ``guaranteed`` reads as ``not_applicable``; a stored ``guaranteed`` backed by prose reads as
        ``manual_recovery``, the prose kept.
        """
        levels: dict[str, Any] = {}
        for axis, kind in _AXIS_TYPES.items():
            raw = data.get(axis)
            try:
                levels[axis] = kind(raw) if isinstance(raw, str) else None
            except ValueError:
                levels[axis] = None
            if levels[axis] is None:
                raise InvalidEffectProfile(f"a stored profile needs a valid «{axis}»; got {raw!r}")
        raw_escalators = data.get("escalates_on")
        escalators = [e for e in raw_escalators if isinstance(e, str)] if isinstance(raw_escalators, list) else []
        raw_contract = data.get("rollback_contract")
        contract = raw_contract if isinstance(raw_contract, str) else None
        if levels["reversibility"] is Reversibility.GUARANTEED:
            if levels["mutation"] is Mutation.NONE:
                levels["reversibility"], contract = Reversibility.NOT_APPLICABLE, None
            elif contract is not None and not names_an_operation(contract):
                levels["reversibility"] = Reversibility.MANUAL_RECOVERY
        return cls(
            levels["mutation"], levels["externality"], levels["reversibility"], levels["authority"],
            escalates_on=tuple(escalators), subject=levels["subject"], rollback_contract=contract,
        )  # fmt: skip

    @classmethod
    def from_partial(cls, axes: Mapping[str, Any]) -> EffectProfile:
        """A person's tightening: the axes they named, ``unknown`` (the top) on the others.

        So ``ceiling.meet(EffectProfile.from_partial({"authority": "read"}))`` moves one axis. Only
        the five axes may be named (a changed amount or path is a new proposal, not a tightening),
        and neither floor of reversibility can be claimed by clicking.
        """
        if not axes:
            raise InvalidEffectProfile("a tightening names at least one axis; an empty one tightens nothing")
        for key in axes:
            if key not in _AXIS_TYPES:
                raise InvalidEffectProfile(
                    f"«{key}» is not an effect axis ({', '.join(AXES)}): changing it is a new proposal, "
                    f"not a tightening"
                )
        levels: dict[str, Any] = {}
        for axis, kind in _AXIS_TYPES.items():
            raw = axes.get(axis, kind("unknown"))
            if not isinstance(raw, str):
                raise InvalidEffectProfile(f"{raw!r} is not a level of {axis}")
            levels[axis] = level_of(kind, raw, what=axis)
        if levels["reversibility"] is Reversibility.GUARANTEED:
            raise InvalidEffectProfile(
                "reversibility «guaranteed» cannot be claimed by a tightening: it buys less scrutiny and needs "
                "a rollback contract naming an operation, which a person cannot supply by choosing it"
            )
        if levels["reversibility"] is Reversibility.NOT_APPLICABLE:
            raise InvalidEffectProfile(
                "reversibility «not_applicable» cannot be claimed by a tightening: it says nothing changes, "
                "so tighten «mutation» instead"
            )
        return cls(
            levels["mutation"], levels["externality"], levels["reversibility"], levels["authority"],
            subject=levels["subject"],
        )  # fmt: skip


# --------------------------------------------------------------------------- per call
@dataclass(frozen=True, slots=True)
class ProfileComposition:
    """The ceiling a call carries (``effective``) and the receipt of how it was reached."""

    effective: EffectProfile
    reductions: Sequence[AxisReduction] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "reductions", tuple(self.reductions))

    def confined_by_trial(self) -> bool:
        """Whether a trial workspace lowered the mutation (read from the receipts, not the profile)."""
        return any(r.axis == "mutation" and r.producer == TRIAL_WORKSPACE for r in self.reductions)


# --------------------------------------------------------------------------- descents
@dataclass(frozen=True, slots=True)
class Descent:
    """``argument == when_value`` lowers the ceiling to ``to`` for that call — when the evidence holds."""

    argument: str
    when_value: Any
    to: EffectProfile
    because: str
    certificate: DescentCertificate | None = None

    def triggered_by(self, arguments: Mapping[str, Any]) -> bool:
        """The argument is present with an identical value (``False`` or ``"yes"`` do not trigger ``True``)."""
        return self.argument in arguments and identical(arguments[self.argument], self.when_value)

    def lowered_axes(self, original: EffectProfile) -> list[str]:
        return [a for a in AXES if getattr(self.to, a).weight < getattr(original, a).weight]

    def holds(self, original: EffectProfile, subject: CallSubject | None = None) -> bool:
        """Whether this descent may lower ``original`` for this call (reason, certificate, judgment, direction)."""
        if trim_ascii(self.because) == "":
            return False
        lowered = self.lowered_axes(original)
        observed = [a for a in lowered if a != "authority"]
        if observed and not self._certified(observed, subject):
            return False
        if "authority" in lowered:
            claim = None
            if subject is not None and subject.policy is not None and subject.facts is not None:
                claim = subject.policy.judge(subject.facts, subject)
            if claim is None or not claim.justifies(self.to.authority):
                return False
        return self.to.is_no_wider_than(original)

    def _certified(self, observed: list[str], subject: CallSubject | None) -> bool:
        cert = self.certificate
        return (
            cert is not None
            and cert.signed_by_its_verifier()
            and cert.speaks_about(self, subject)
            and cert.watched(subject.handler_digest if subject is not None else None)
            and cert.to == self.to
            and cert.covers_all(observed)
        )

    def explain(self, original: EffectProfile, subject: CallSubject | None) -> list[AxisReduction]:
        """One reduction per lowered axis, naming its producer (``policy`` or ``observer``)."""
        reductions = []
        for axis in self.lowered_axes(original):
            if axis == "authority":
                producer, provenance = "policy", "policy: no judgment"
                if subject is not None and subject.policy is not None:
                    claim = subject.policy.judge(subject.facts or ContextFacts(), subject)
                    if claim is not None:
                        provenance = f"{claim.policy_id}@{claim.policy_digest} over {claim.facts_fingerprint}"
            else:
                producer, provenance = "observer", "observer: no certificate"
                if self.certificate is not None:
                    provenance = f"{self.certificate.verifier} covers [{','.join(self.certificate.covers)}]"
            reductions.append(AxisReduction(axis, getattr(original, axis).value, getattr(self.to, axis).value,
                                            producer, provenance))  # fmt: skip
        return reductions


# --------------------------------------------------------------------------- compose
def compose(ceiling: EffectProfile, arguments: Mapping[str, Any], subject: CallSubject | None) -> ProfileComposition:
    """Declared descents (first that holds), then trial confinement, then subject attestation."""
    effective, reductions = ceiling, []
    for descent in ceiling.descents:
        if descent.triggered_by(arguments) and descent.holds(ceiling, subject):
            effective, reductions = descent.to, descent.explain(ceiling, subject)
            break
    confinement = subject.confinement if subject is not None else None
    if confinement is not None and effective.mutation.weight > Mutation.EPHEMERAL.weight:
        reductions.append(AxisReduction("mutation", effective.mutation.value, Mutation.EPHEMERAL.value,
                                        TRIAL_WORKSPACE, confinement.provenance()))  # fmt: skip
        effective = replace(effective, mutation=Mutation.EPHEMERAL)
    attestation = subject.subject_attestation if subject is not None else None
    if (
        attestation is not None
        and attestation.subject.weight < effective.subject.weight
        and (effective.mutates or attestation.subject is Subject.NONE)  # a read has no subject to lower
    ):
        reductions.append(AxisReduction("subject", effective.subject.value, attestation.subject.value,
                                        attestation.producer, attestation.provenance))  # fmt: skip
        effective = replace(effective, subject=attestation.subject)
    return ProfileComposition(effective, tuple(reductions))

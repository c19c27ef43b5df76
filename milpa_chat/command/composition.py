"""Per-call composition: how one call's arguments and circumstances may lower a ceiling.

Only producers lower an axis, and each says so in an :class:`AxisReduction`:

* a declared :class:`Descent` (``dry_run=True`` lowers the ceiling to a read) holds only with a
  signed :class:`DescentCertificate` bound to this operation, this predicate and this handler's
  digest — and a lowered *authority* only with an :class:`AuthorityPolicy` judging the caller's
  :class:`ContextFacts` live;
* a :class:`TrialConfinement` (the call runs in a disposable workspace) lowers *mutation* to
  ``ephemeral`` and nothing else;
* a :class:`SubjectAttestation` from the owner of the call's payload lowers *subject*.

Nothing here ever raises an axis, and a producer that cannot show its evidence lowers nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from milpa_chat.command._json import compact_json, identical, sha256_text
from milpa_chat.command.certificates import DescentCertificate
from milpa_chat.command.errors import InvalidEffectProfile
from milpa_chat.command.ids import trim_ascii
from milpa_chat.command.levels import AXES, Authority, Mutation, Subject, level_of

if TYPE_CHECKING:
    # Only in annotations: the profile module calls into this one (compose_for_call), never the reverse.
    from milpa_chat.command.effects import EffectProfile

__all__ = [
    "AuthorityClaim",
    "AuthorityPolicy",
    "AuthorityRule",
    "AxisReduction",
    "CallSubject",
    "ContextFacts",
    "DeclaredAuthorityPolicy",
    "Descent",
    "DescentCertificate",
    "ProfileComposition",
    "SubjectAttestation",
    "TrialConfinement",
]

TRIAL_WORKSPACE = "trial-workspace"


# --------------------------------------------------------------------------- records
@dataclass(frozen=True, slots=True)
class AxisReduction:
    """One axis a producer lowered for one call: ``from_`` and ``to`` are level strings."""

    axis: str
    from_: str
    to: str
    producer: str
    provenance: str


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


@dataclass(frozen=True, slots=True)
class ContextFacts:
    """What is known about the caller — facts, no verdict."""

    principal: str | None = None
    verified: bool = False
    channel: str | None = None
    scopes: Sequence[str] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "scopes", tuple(self.scopes))

    def fingerprint(self) -> str:
        """``sha256:<hex>`` of the facts (scopes sorted), in the compact JSON spelling."""
        data = {"channel": self.channel, "principal": self.principal, "scopes": sorted(self.scopes),
                "verified": self.verified}  # fmt: skip
        return sha256_text(compact_json(data, escape=True))


@dataclass(frozen=True, slots=True)
class AuthorityClaim:
    """A policy's live judgment that this caller may spend ``authority`` on ``operation``."""

    authority: Authority
    operation: str
    policy_id: str
    policy_digest: str
    facts_fingerprint: str

    def justifies(self, to: Authority) -> bool:
        """Whether the claim covers lowering authority to ``to``."""
        return self.authority.weight <= to.weight


@runtime_checkable
class AuthorityPolicy(Protocol):
    """Judges, per call, which authority a caller's facts justify (``None``: no judgment)."""

    def judge(self, facts: ContextFacts, subject: CallSubject) -> AuthorityClaim | None: ...

    def digest(self) -> str: ...


@dataclass(frozen=True, slots=True)
class AuthorityRule:
    """A rule of :class:`DeclaredAuthorityPolicy`: holding every scope justifies ``authority``."""

    scopes: Sequence[str]
    authority: Authority

    def __post_init__(self) -> None:
        object.__setattr__(self, "scopes", tuple(self.scopes))
        object.__setattr__(self, "authority", level_of(Authority, self.authority, what="authority"))


@dataclass(frozen=True, slots=True)
class DeclaredAuthorityPolicy:
    """Rules per operation name (exact name): ``{"capabilities:enable": AuthorityRule(["x"], "read")}``.

    A rule may also be given as ``{"scopes": [...], "authority": Authority.READ}``.
    """

    id: str
    rules: Mapping[str, AuthorityRule] = field(default_factory=dict)

    def __post_init__(self) -> None:
        rules = {
            name: rule if isinstance(rule, AuthorityRule) else AuthorityRule(rule["scopes"], rule["authority"])
            for name, rule in self.rules.items()
        }
        object.__setattr__(self, "rules", rules)

    def judge(self, facts: ContextFacts, subject: CallSubject) -> AuthorityClaim | None:
        if not facts.verified:
            return None
        rule = self.rules.get(subject.operation)
        if rule is None or any(scope not in facts.scopes for scope in rule.scopes):
            return None
        return AuthorityClaim(rule.authority, subject.operation, self.id, self.digest(), facts.fingerprint())

    def digest(self) -> str:
        """Changes when a rule is edited, not when rules or scopes are reordered."""
        rules = {
            name: {"authority": self.rules[name].authority.value, "scopes": sorted(self.rules[name].scopes)}
            for name in sorted(self.rules)
        }
        return sha256_text(compact_json({"id": self.id, "rules": rules}, escape=True))


@dataclass(frozen=True, slots=True)
class TrialConfinement:
    """The call runs in a disposable workspace: what it writes dies with the workspace."""

    workspace_id: str
    arguments_digest: str
    bounds: Mapping[str, str]
    because: str

    def __post_init__(self) -> None:
        if any(trim_ascii(v) == "" for v in (self.workspace_id, self.arguments_digest, self.because)):
            raise InvalidEffectProfile(
                "a trial confinement names its workspace, the exact call (arguments_digest) and why (because); "
                "a confinement without them is a claim nobody can check"
            )

    def provenance(self) -> str:
        bounds = ",".join(f"{k}:{v}" for k, v in self.bounds.items())
        return f"trial:{self.workspace_id} args:{self.arguments_digest} bounds:{{{bounds}}}"


@dataclass(frozen=True, slots=True)
class SubjectAttestation:
    """The owner of a call's payload attests a lower subject for this call."""

    subject: Subject
    producer: str
    provenance: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "subject", level_of(Subject, self.subject, what="subject"))
        if trim_ascii(self.producer) == "" or trim_ascii(self.provenance) == "":
            raise InvalidEffectProfile("a subject attestation names its producer and its provenance")


@dataclass(frozen=True, slots=True)
class CallSubject:
    """What a call is about to run: the operation's name, its handler's digest, and the evidence at hand."""

    operation: str
    handler_digest: str | None = None
    policy: AuthorityPolicy | None = None
    facts: ContextFacts | None = None
    confinement: TrialConfinement | None = None
    subject_attestation: SubjectAttestation | None = None


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

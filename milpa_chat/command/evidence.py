"""What is known about one call: the evidence a producer shows before it lowers an axis.

The caller's :class:`ContextFacts` and an :class:`AuthorityPolicy` judging them live (an
:class:`AuthorityClaim`), a :class:`TrialConfinement`, a :class:`SubjectAttestation`, gathered in the
:class:`CallSubject` a profile is composed for, and the :class:`AxisReduction` receipt a producer leaves.
These records name no profile: :mod:`milpa_chat.command.effects` composes a profile with them
(:meth:`~milpa_chat.command.effects.EffectProfile.compose_for_call`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from milpa_chat.command._json import compact_json, sha256_text
from milpa_chat.command.errors import InvalidEffectProfile
from milpa_chat.command.ids import trim_ascii
from milpa_chat.command.levels import Authority, Subject, level_of

__all__ = [
    "TRIAL_WORKSPACE",
    "AuthorityClaim",
    "AuthorityPolicy",
    "AuthorityRule",
    "AxisReduction",
    "CallSubject",
    "ContextFacts",
    "DeclaredAuthorityPolicy",
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

"""``DescentCertificate``: a verifier's signed observation that a descent holds.

A certificate is bound to one operation (exact name), one predicate (``{"dry_run": True}``), the
digest of the handler it watched, the profile it vouches for and the axes it covers; it is signed
with Ed25519 over a canonical payload. Any mismatch, a malformed key or signature, or a signature by
another key, and it buys nothing — it never raises.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from milpa_chat.command import _ed25519
from milpa_chat.command._json import compact_json, identical

if TYPE_CHECKING:
    from milpa_chat.command.evidence import CallSubject
    from milpa_chat.command.levels import Authority, Externality, Mutation, Reversibility, Subject

__all__ = ["DescentCertificate", "ProfileLevels", "generate_signing_key", "public_key_of"]


class ProfileLevels(Protocol):
    """What a certificate reads of the profile it vouches for: its five levels (an ``EffectProfile`` has them).

    The profile's descents carry certificates, so the certificate names the profile by this shape, not by
    its class: the profile's module stays above this one.
    """

    @property
    def mutation(self) -> Mutation: ...
    @property
    def externality(self) -> Externality: ...
    @property
    def reversibility(self) -> Reversibility: ...
    @property
    def authority(self) -> Authority: ...
    @property
    def subject(self) -> Subject: ...


class _Predicate(Protocol):
    """What a certificate reads of a descent: the argument and the value that trigger it."""

    @property
    def argument(self) -> str: ...
    @property
    def when_value(self) -> Any: ...


def generate_signing_key() -> bytes:
    """A fresh 32-byte Ed25519 seed (for tests and tooling; see :mod:`milpa_chat.command._ed25519`)."""
    import os

    return os.urandom(32)


def public_key_of(secret_key: bytes) -> str:
    """The base64 public key a certificate names as ``verifier_public_key``."""
    return base64.b64encode(_ed25519.public_key(secret_key)).decode()


def _profile_payload(p: ProfileLevels) -> dict[str, str]:
    return {"authority": p.authority.value, "externality": p.externality.value, "mutation": p.mutation.value,
            "reversibility": p.reversibility.value, "subject": p.subject.value}  # fmt: skip


def _sorted_deep(bag: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _sorted_deep(v) if isinstance(v, Mapping) else v for k, v in sorted(bag.items())}


def _strict_b64(text: str | None) -> bytes | None:
    if text is None:
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class DescentCertificate:
    """A verifier's signed observation that, for this predicate, this handler stays within ``to``."""

    verifier: str
    operation: str
    predicate: Mapping[str, Any]
    covers: Sequence[str]
    to: ProfileLevels
    handler_sha256: str | None = None
    envelope: Mapping[str, Any] = field(default_factory=dict)
    verdict: str | None = None
    signature: str | None = None
    verifier_public_key: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "covers", tuple(self.covers))

    def canonical_payload(self) -> str:
        """The signed text: compact JSON, slashes and Unicode unescaped, keys in a fixed order."""
        return compact_json(
            {
                "certificate_subject": {
                    "handler_digest": self.handler_sha256,
                    "operation": self.operation,
                    "predicate": dict(sorted(self.predicate.items())),
                    "to": _profile_payload(self.to),
                },
                "covers": sorted(self.covers),
                "observation_envelope": _sorted_deep(self.envelope),
                "verdict": self.verdict,
                "verifier_identity": self.verifier,
            },
            escape=False,
        )

    def signed_with(self, secret_key: bytes) -> DescentCertificate:
        """A copy signed with an Ed25519 secret key (32-byte seed or 64-byte libsodium key)."""
        signature = _ed25519.sign(secret_key, self.canonical_payload().encode())
        return replace(self, signature=base64.b64encode(signature).decode())

    def signed_by_its_verifier(self) -> bool:
        """Whether the signature verifies under ``verifier_public_key``. Never raises."""
        signature, key = _strict_b64(self.signature), _strict_b64(self.verifier_public_key)
        if signature is None or key is None or len(key) != 32 or len(signature) != 64:
            return False
        return _ed25519.verify(key, self.canonical_payload().encode(), signature)

    def speaks_about(self, descent: _Predicate, subject: CallSubject | None) -> bool:
        """Whether it was issued for this operation (exact name) and exactly this predicate."""
        return (
            subject is not None
            and self.operation == subject.operation
            and identical(dict(self.predicate), {descent.argument: descent.when_value})
        )

    def watched(self, handler_digest: str | None) -> bool:
        """Whether it watched the handler whose digest is given (constant-time comparison)."""
        if self.handler_sha256 is None or handler_digest is None:
            return False
        return hmac.compare_digest(self.handler_sha256.encode(), handler_digest.encode())

    def covers_all(self, axes: Iterable[str]) -> bool:
        return all(axis in self.covers for axis in axes)

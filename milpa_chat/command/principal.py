"""``VerifiedPrincipal``: who a caller is, and whether anyone checked.

Only :meth:`VerifiedPrincipal.admit` — called by the code that checked a signature, a passkey or a
session — produces a verified principal. Everything read back from data (:meth:`~VerifiedPrincipal.from_dict`),
copied or unpickled is unverified: what is stored is the assertion, not the grade.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from milpa_chat.command.evidence import ContextFacts

__all__ = ["VerifiedPrincipal"]

_UNKNOWN = "desconocido"  # how an unknown terminal user or host is spelled


class VerifiedPrincipal:
    """A principal with its grade. ``VerifiedPrincipal("key:X")`` is unverified; use :meth:`admit` to verify."""

    __slots__ = ("channel", "issuer", "method", "principal", "scopes", "verified")

    principal: str
    verified: bool
    channel: str | None
    scopes: tuple[str, ...]
    method: str | None
    issuer: str | None

    def __init__(
        self,
        principal: str,
        *,
        channel: str | None = None,
        scopes: Iterable[str] = (),
        method: str | None = None,
        issuer: str | None = None,
    ) -> None:
        for name, value in (("principal", principal), ("verified", False), ("channel", channel),
                            ("scopes", tuple(scopes)), ("method", method), ("issuer", issuer)):  # fmt: skip
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("VerifiedPrincipal is immutable")

    @classmethod
    def admit(
        cls, principal: str, channel: str | None, scopes: Iterable[str], method: str | None, issuer: str | None
    ) -> VerifiedPrincipal:
        """The one way to a verified principal: say how (``method``) and by whom (``issuer``) it was checked."""
        admitted = cls(principal, channel=channel, scopes=scopes, method=method, issuer=issuer)
        object.__setattr__(admitted, "verified", True)
        return admitted

    @classmethod
    def from_terminal(cls, user: str | None, host: str | None) -> VerifiedPrincipal:
        """``cli:<user>@<host>``, unverified: anyone at that terminal could be that user."""
        return cls(f"cli:{user or _UNKNOWN}@{host or _UNKNOWN}", channel="cli")

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> VerifiedPrincipal | None:
        """Read a stored principal, always unverified; ``None`` without a non-empty principal."""
        principal = row.get("principal")
        if not isinstance(principal, str) or not principal:
            return None
        raw_scopes = row.get("scopes")
        scopes = [s for s in raw_scopes if isinstance(s, str)] if isinstance(raw_scopes, list | tuple) else []

        def text(key: str) -> str | None:
            value = row.get(key)
            return value if isinstance(value, str) else None

        return cls(principal, channel=text("channel"), scopes=scopes, method=text("method"), issuer=text("issuer"))

    def to_dict(self) -> dict[str, Any]:
        return {"principal": self.principal, "verified": self.verified, "channel": self.channel,
                "scopes": list(self.scopes), "method": self.method, "issuer": self.issuer}  # fmt: skip

    def to_facts(self) -> ContextFacts:
        return ContextFacts(self.principal, self.verified, self.channel, self.scopes)

    # A copy or an unpickled principal never carries the grade.
    def __reduce__(self) -> tuple[Any, ...]:
        return (_unverified, (self.principal, self.channel, self.scopes, self.method, self.issuer))

    def __copy__(self) -> VerifiedPrincipal:
        return _unverified(self.principal, self.channel, self.scopes, self.method, self.issuer)

    def __deepcopy__(self, memo: dict[int, Any]) -> VerifiedPrincipal:
        return _unverified(self.principal, self.channel, copy.deepcopy(self.scopes, memo), self.method, self.issuer)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, VerifiedPrincipal):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self.principal, self.verified))

    def __repr__(self) -> str:
        grade = "verified" if self.verified else "unverified"
        return f"VerifiedPrincipal({self.principal!r}, {grade}, channel={self.channel!r})"


def _unverified(
    principal: str, channel: str | None, scopes: Iterable[str], method: str | None, issuer: str | None
) -> VerifiedPrincipal:
    return VerifiedPrincipal(principal, channel=channel, scopes=scopes, method=method, issuer=issuer)

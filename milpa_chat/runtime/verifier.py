"""The runtime's seams as protocols: ``Verifier`` (with its result states) and ``ToolProvider``.

``Verifier.verify(request, ctx)`` answers a call of a ``verify=`` tool with a
:class:`VerificationResult`: ``pending`` (someone decides later; the call stops with the request
id), ``passed`` (the call goes on at once) or ``failed`` (the call is denied with the reason).
:class:`~milpa_chat.runtime.HumanVerifier` is the first implementation (always ``pending``: a
person decides through the one durable approval); another verifier (a rule, a second model, an
external review service) plugs in with ``ToolRegistry(verifier=...)``.

``ToolProvider`` is anything with ``tool_definitions()``: ``ToolRegistry.scan`` registers what it
returns, so tools can come from a database, a remote catalogue or another framework.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.definition import ToolDefinition, VerifyPolicy

__all__ = ["ToolProvider", "VerificationRequest", "VerificationResult", "VerificationStatus", "Verifier"]

#: The states (``waived``: a verifier that decided the call needs no verification).
VerificationStatus = Literal["pending", "passed", "failed", "waived"]


@dataclass(frozen=True, slots=True)
class VerificationRequest:
    """What a verifier is asked about: one call of a ``verify=`` tool, its JSON arguments and a summary."""

    tool: ToolDefinition
    args: Mapping[str, Any]
    summary: str

    @property
    def policy(self) -> VerifyPolicy:
        assert self.tool.verify is not None
        return self.tool.verify


@dataclass(frozen=True, slots=True)
class VerificationResult:
    """A verifier's answer. ``request_id`` / ``expires_at`` name a pending request a person decides."""

    status: VerificationStatus
    verifier: str
    reason: str | None = None
    principal: str | None = None
    request_id: str | None = None
    expires_at: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_satisfied(self) -> bool:
        """True when the call may go on (``passed`` or ``waived``)."""
        return self.status in ("passed", "waived")

    @classmethod
    def pending(cls, verifier: str, request_id: str | None = None, **extra: Any) -> VerificationResult:
        return cls("pending", verifier, request_id=request_id, **extra)

    @classmethod
    def passed(cls, verifier: str, principal: str | None = None, **extra: Any) -> VerificationResult:
        return cls("passed", verifier, principal=principal, **extra)

    @classmethod
    def failed(cls, reason: str, verifier: str, principal: str | None = None, **extra: Any) -> VerificationResult:
        return cls("failed", verifier, reason=reason, principal=principal, **extra)

    def to_dict(self) -> dict[str, Any]:
        """``{status, reason, verifier, principal, missing, metadata}``, plus the request id."""
        return {
            "status": self.status,
            "reason": self.reason,
            "verifier": self.verifier,
            "principal": self.principal,
            "missing": [],
            "metadata": dict(self.metadata),
            "request_id": self.request_id,
        }


@runtime_checkable
class Verifier(Protocol):
    """Decides whether a call of a ``verify=`` tool may run (see the module docstring)."""

    name: str

    async def verify(self, request: VerificationRequest, ctx: ToolContext) -> VerificationResult: ...


@runtime_checkable
class ToolProvider(Protocol):
    """A source of ready tool definitions, registered by ``ToolRegistry.scan(provider)``."""

    def tool_definitions(self) -> Iterable[ToolDefinition]: ...

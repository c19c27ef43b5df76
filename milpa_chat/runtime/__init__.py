"""The tool runtime: declare tools, then run every call through one pipeline.

resolve -> limits -> validate -> authorize -> rate limit -> plan -> verify / confirm -> execute -> audit,
as the ordered steps of :mod:`milpa_chat.runtime.pipeline`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from milpa_chat.runtime.approval import Approval, ApprovalRefused
from milpa_chat.runtime.approvals import ApprovalDesk, Change, Delivery
from milpa_chat.runtime.audit import AuditLogger, redact
from milpa_chat.runtime.confirm import ConfirmationToken, ConfirmationTokenStore
from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.definition import ToolDefinition, VerifyPolicy
from milpa_chat.runtime.events import (
    EventDispatcher,
    InterceptionSlot,
    ToolExecuted,
    ToolExecuting,
    ToolFailed,
)
from milpa_chat.runtime.limits import PayloadLimits, check_payload
from milpa_chat.runtime.pipeline import STEPS, Call, Step
from milpa_chat.runtime.policy import ChannelPolicy, PolicyGate, PolicyRule, RuleProvider, Verdict
from milpa_chat.runtime.ratelimit import RateLimiter
from milpa_chat.runtime.redaction import mask_text
from milpa_chat.runtime.registry import ToolRegistry
from milpa_chat.runtime.result import ErrorCode, ToolResult
from milpa_chat.runtime.verification import HumanVerifier, Verification, VerificationRefused
from milpa_chat.runtime.verification_tool import VerificationTool
from milpa_chat.runtime.verifier import ToolProvider, VerificationRequest, VerificationResult, Verifier

if TYPE_CHECKING:
    from milpa_chat.runtime.declare import Param, tool


def __getattr__(name: str) -> Any:
    # ``tool`` and ``Param`` live in ``declare``, which imports pydantic: loaded on first use so
    # that ``import milpa_chat`` stays cheap for code that only handles results and contexts.
    if name in ("tool", "Param"):
        from milpa_chat.runtime import declare

        return getattr(declare, name)
    raise AttributeError(f"module 'milpa_chat.runtime' has no attribute {name!r}")


__all__ = [
    "STEPS",
    "Approval",
    "ApprovalDesk",
    "ApprovalRefused",
    "AuditLogger",
    "Call",
    "Change",
    "ChannelPolicy",
    "ConfirmationToken",
    "ConfirmationTokenStore",
    "Delivery",
    "ErrorCode",
    "EventDispatcher",
    "HumanVerifier",
    "InterceptionSlot",
    "Param",
    "PayloadLimits",
    "PolicyGate",
    "PolicyRule",
    "RateLimiter",
    "RuleProvider",
    "Step",
    "ToolContext",
    "ToolDefinition",
    "ToolExecuted",
    "ToolExecuting",
    "ToolFailed",
    "ToolProvider",
    "ToolRegistry",
    "ToolResult",
    "Verdict",
    "Verification",
    "VerificationRefused",
    "VerificationRequest",
    "VerificationResult",
    "VerificationTool",
    "Verifier",
    "VerifyPolicy",
    "check_payload",
    "mask_text",
    "redact",
    "tool",
]

"""The tool runtime: declare tools, then run every call through one pipeline.

resolve -> limits -> validate -> authorize -> rate limit -> plan -> verify / confirm -> execute -> audit,
as the ordered steps of :mod:`milpa_chat.runtime.pipeline`.
"""

from __future__ import annotations

from importlib import import_module as _import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from milpa_chat.runtime.approval import Approval, ApprovalRefused
    from milpa_chat.runtime.approvals import ApprovalDesk, Change, Delivery
    from milpa_chat.runtime.audit import AuditLogger, redact
    from milpa_chat.runtime.confirm import ConfirmationToken, ConfirmationTokenStore
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.declare import tool
    from milpa_chat.runtime.definition import ToolDefinition, VerifyPolicy
    from milpa_chat.runtime.events import EventDispatcher, InterceptionSlot, ToolExecuted, ToolExecuting, ToolFailed
    from milpa_chat.runtime.limits import PayloadLimits, check_payload
    from milpa_chat.runtime.params import Param
    from milpa_chat.runtime.pipeline import STEPS, Call, Step
    from milpa_chat.runtime.policy import ChannelPolicy, PolicyGate, PolicyRule, RuleProvider, Verdict
    from milpa_chat.runtime.ratelimit import RateLimiter
    from milpa_chat.runtime.redaction import mask_text
    from milpa_chat.runtime.registry import ToolRegistry
    from milpa_chat.runtime.result import ErrorCode, ToolResult
    from milpa_chat.runtime.verification import HumanVerifier, Verification, VerificationRefused
    from milpa_chat.runtime.verification_tool import VerificationTool
    from milpa_chat.runtime.verifier import ToolProvider, VerificationRequest, VerificationResult, Verifier

#: The module each public name lives in, imported when the name is first asked for: ``import milpa_chat``
#: stays cheap, and a program loads only the parts of the runtime it uses.
_HOMES: dict[str, str] = {
    "Approval": "approval",
    "ApprovalDesk": "approvals",
    "ApprovalRefused": "approval",
    "AuditLogger": "audit",
    "Call": "pipeline",
    "Change": "approvals",
    "ChannelPolicy": "policy",
    "ConfirmationToken": "confirm",
    "ConfirmationTokenStore": "confirm",
    "Delivery": "approvals",
    "ErrorCode": "result",
    "EventDispatcher": "events",
    "HumanVerifier": "verification",
    "InterceptionSlot": "events",
    "Param": "params",
    "PayloadLimits": "limits",
    "PolicyGate": "policy",
    "PolicyRule": "policy",
    "RateLimiter": "ratelimit",
    "RuleProvider": "policy",
    "STEPS": "pipeline",
    "Step": "pipeline",
    "ToolContext": "context",
    "ToolDefinition": "definition",
    "ToolExecuted": "events",
    "ToolExecuting": "events",
    "ToolFailed": "events",
    "ToolProvider": "verifier",
    "ToolRegistry": "registry",
    "ToolResult": "result",
    "Verdict": "policy",
    "Verification": "verification",
    "VerificationRefused": "verification",
    "VerificationRequest": "verifier",
    "VerificationResult": "verifier",
    "VerificationTool": "verification_tool",
    "Verifier": "verifier",
    "VerifyPolicy": "definition",
    "check_payload": "limits",
    "mask_text": "redaction",
    "redact": "audit",
    "tool": "declare",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is not None:
        value = getattr(_import_module(f"{__name__}.{home}"), name)
    elif name.isidentifier() and not name.startswith("__"):
        # a module of the runtime (``milpa_chat.runtime.pipeline``), as an attribute of the package
        try:
            value = _import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


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

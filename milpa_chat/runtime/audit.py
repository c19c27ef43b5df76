"""Audit: one log line per call outcome, through stdlib ``logging``, with secrets redacted.

Redaction (DESIGN Decision 8) matches keys case- and separator-insensitively at any depth:
``apiKey``, ``api-key``, ``API_KEY``, ``Authorization``, ``client_secret``, ``password``,
``access_token``... A redacted value never reaches a log line, a card or a plan.

Lines (logger ``milpa_chat.audit``; INFO when the call succeeded, WARNING otherwise)::

    [ToolAudit] {request_id} | {channel} | {tool} | {principal} | {took_ms}ms | OK | args={json}
    [ToolAudit] {request_id} | ... | ERROR:{code} | args={json}
    [ToolAudit] AUTH_DENIED | {request_id} | {channel} | {tool} | {principal} | reason={reason}
    [ToolAudit] VALIDATION_FAILED | {request_id} | {channel} | {tool} | errors={path: message; ...}
    [ToolRuntime] Timeout exceeded | {request_id} | {channel} | {tool} | execution=1.234s | limit=30s
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.result import ToolResult

__all__ = ["REDACTED", "AuditLogger", "is_sensitive_key", "redact"]

REDACTED = "***REDACTED***"

_SEPARATORS = re.compile(r"[^a-z0-9]")

#: Normalised keys (lower-case, separators removed) that are always secret.
SENSITIVE_KEYS: frozenset[str] = frozenset(
    {
        "password", "passwd", "pwd", "passphrase", "secret", "token", "apikey", "authorization",
        "auth", "cookie", "setcookie", "sessionid", "privatekey", "clientsecret", "credentials",
        "signingsecret", "pin", "otp", "cvv", "cvc", "cardnumber", "ssn",
    }
)
#: Endings that make a normalised key secret (``access_token``, ``bot_token``, ``db_password``...).
SENSITIVE_SUFFIXES: tuple[str, ...] = (
    "password", "passwd", "secret", "token", "apikey", "privatekey", "credentials", "sessionid",
)


def _normalise(key: str) -> str:
    return _SEPARATORS.sub("", key.lower())


def is_sensitive_key(key: object, extra: Iterable[str] = ()) -> bool:
    """True when a mapping key names a secret (case- and separator-insensitive)."""
    if not isinstance(key, str):
        return False
    norm = _normalise(key)
    if norm in SENSITIVE_KEYS or norm.endswith(SENSITIVE_SUFFIXES):
        return True
    return any(norm == _normalise(e) for e in extra)


def redact(value: Any, extra: Iterable[str] = ()) -> Any:
    """A deep copy of ``value`` with every secret-named key's value replaced by ``***REDACTED***``.

    Mappings and lists/tuples are walked at any depth; ``_ctx`` keys are dropped.
    """
    extra = tuple(extra)
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            if k == "_ctx":
                continue
            out[k] = REDACTED if is_sensitive_key(k, extra) else redact(v, extra)
        return out
    if isinstance(value, list | tuple):
        return [redact(v, extra) for v in value]
    return value


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))


class AuditLogger:
    """Writes the audit lines. Formatting only happens when the level is enabled.

    Records are built with ``Logger.makeRecord`` and handed to ``Logger.handle`` directly: the
    caller's file and line (``findCaller``, a frame walk on every line) say nothing useful in an
    audit trail, and skipping it halves the cost of a line.
    """

    def __init__(
        self, logger: logging.Logger | None = None, *, sensitive_fields: Iterable[str] = ()
    ) -> None:
        self.logger = logger or logging.getLogger("milpa_chat.audit")
        self._extra: tuple[str, ...] = tuple(sensitive_fields)

    def add_sensitive_field(self, name: str) -> None:
        self._extra = (*self._extra, name)

    def redact(self, value: Any) -> Any:
        return redact(value, self._extra)

    # ------------------------------------------------------------ outcomes
    def call(
        self,
        ctx: ToolContext,
        tool: str,
        args: Mapping[str, Any],
        ok: bool,
        code: str | None,
        took_ms: float,
    ) -> None:
        level = logging.INFO if ok else logging.WARNING
        if not self.logger.isEnabledFor(level):
            return
        outcome = "OK" if ok else f"ERROR:{code or 'ERROR'}"
        self._emit(
            level,
            "[ToolAudit] %s | %s | %s | %s | %dms | %s | args=%s",
            (ctx.request_id, ctx.channel, tool, ctx.principal or "anonymous", int(took_ms), outcome,
             _dump(self.redact(args))),
            {"milpa_audit": {"tool": tool, "ok": ok, "code": code, "principal": ctx.principal}},
        )

    def _emit(self, level: int, msg: str, args: tuple[Any, ...], extra: dict[str, Any] | None = None) -> None:
        record = self.logger.makeRecord(self.logger.name, level, "milpa_chat.audit", 0, msg, args, None,
                                        extra=extra)
        self.logger.handle(record)

    def executed(self, ctx: ToolContext, tool: str, args: Mapping[str, Any], result: ToolResult) -> None:
        took = result.meta.get("took_ms", 0)
        self.call(ctx, tool, args, result.success, None if result.success else (result.code or "ERROR"),
                  took if isinstance(took, int | float) else 0)
        if result.meta.get("timeout_exceeded") is True:
            self.timeout(ctx, tool, result.meta.get("execution_time", 0.0), result.meta.get("timeout_limit", 0))

    def failed(self, ctx: ToolContext, tool: str, args: Mapping[str, Any], took_ms: float) -> None:
        self.call(ctx, tool, args, False, "EXCEPTION", took_ms)

    def denied(self, ctx: ToolContext, tool: str, reason: str) -> None:
        if self.logger.isEnabledFor(logging.WARNING):
            self._emit(logging.WARNING, "[ToolAudit] AUTH_DENIED | %s | %s | %s | %s | reason=%s",
                       (ctx.request_id, ctx.channel, tool, ctx.principal or "anonymous", reason))

    def validation_failed(self, ctx: ToolContext, tool: str, errors: str) -> None:
        """``errors`` is the joined ``path: message; ...`` text (argument values are never in it)."""
        if self.logger.isEnabledFor(logging.WARNING):
            self._emit(logging.WARNING, "[ToolAudit] VALIDATION_FAILED | %s | %s | %s | errors=%s",
                       (ctx.request_id, ctx.channel, tool, errors))

    def timeout(self, ctx: ToolContext, tool: str, execution: Any, limit: Any) -> None:
        if self.logger.isEnabledFor(logging.WARNING):
            self._emit(logging.WARNING, "[ToolRuntime] Timeout exceeded | %s | %s | %s | execution=%.3fs | limit=%gs",
                       (ctx.request_id, ctx.channel, tool, float(execution), float(limit)))

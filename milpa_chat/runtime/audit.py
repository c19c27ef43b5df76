"""Audit: one log line per call outcome, through stdlib ``logging``, with secrets redacted.

Redaction is :mod:`milpa_chat.runtime.redaction`, the rule every card and
renderer uses too: secret keys matched by their words at any depth (``apiKey``, ``api-key``,
``API_KEY``, ``Authorization``, ``client_secret``, ``aws_secret_access_key``, ``passwords``...)
and secrets inside text (``Bearer …``, ``sk-…``, ``password=…``, URL passwords...). A redacted
value never reaches a log line, a card or a plan.

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
import os
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from milpa_chat.runtime.redaction import REDACTED, Redaction, is_secret_key, mask_text, redact

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.result import ToolResult

__all__ = ["REDACTED", "AuditLogger", "is_sensitive_key", "redact"]

#: The old name of :func:`milpa_chat.runtime.redaction.is_secret_key`.
is_sensitive_key = is_secret_key


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))


class _RecordTemplates:
    """Audit records copied from one ``LogRecord`` per logger and level, then given their time,
    message and thread: the same attributes ``Logger.makeRecord`` sets, without recomputing the
    ones that never change for an audit line (file, module, level name, process id and name).

    The templates belong to the process that made them: a forked child forgets them (its process id
    and name are its own), and makes them again on its first line."""

    def __init__(self) -> None:
        self._made: dict[tuple[str, int], dict[str, Any]] = {}

    def forget(self) -> None:
        self._made = {}

    def make(
        self, name: str, level: int, msg: str, args: tuple[Any, ...], extra: dict[str, Any] | None
    ) -> logging.LogRecord:
        template = self._made.get((name, level))
        if template is None:
            template = logging.LogRecord(name, level, "milpa_chat.audit", 0, "", (), None).__dict__
            self._made[(name, level)] = template
        fields = template.copy()
        now = _time_ns()
        created = now / 1e9
        fields["created"] = created
        fields["msecs"] = (now % 1_000_000_000) // 1_000_000 + 0.0
        fields["relativeCreated"] = (created - _START) * 1000
        fields["msg"] = msg
        fields["args"] = args
        if logging.logThreads:
            fields["thread"] = _get_ident()
            fields["threadName"] = _current_thread().name
        if "taskName" in fields:  # Python 3.12+
            fields["taskName"] = _task_name()
        if extra:
            fields.update(extra)
        record: logging.LogRecord = _new_record(logging.LogRecord)
        record.__dict__ = fields
        return record


_new_record = logging.LogRecord.__new__
_time_ns = time.time_ns
_get_ident = threading.get_ident
_current_thread = threading.current_thread


def _task_name() -> str | None:
    loop_module = sys.modules.get("asyncio")
    if loop_module is None:
        return None
    try:
        task = loop_module.current_task()
    except RuntimeError:
        return None
    return task.get_name() if task is not None else None


_START: float = float(getattr(logging, "_startTime", time.time()))
if _START > 1e15:  # nanoseconds (Python 3.13+)
    _START /= 1e9
_records = _RecordTemplates()
if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_records.forget)


class AuditLogger:
    """Writes the audit lines. Formatting only happens when the level is enabled.

    Records are built with ``Logger.makeRecord`` and handed to ``Logger.handle`` directly: the
    caller's file and line (``findCaller``, a frame walk on every line) say nothing useful in an
    audit trail, and skipping it halves the cost of a line.
    """

    def __init__(self, logger: logging.Logger | None = None, *, sensitive_fields: Iterable[str] = ()) -> None:
        self.logger = logger or logging.getLogger("milpa_chat.audit")
        self.redaction = Redaction(sensitive_fields)
        self._masked: dict[str, str] = {}

    def add_sensitive_field(self, name: str) -> None:
        self.redaction = Redaction((*self.redaction.extra, name))

    def writes(self, level: int) -> bool:
        """Whether a line at ``level`` reaches a handler that writes it. Only the library's
        ``NullHandler`` listening means no: no record is built, no text is formatted or masked."""
        logger: logging.Logger | None = self.logger
        assert logger is not None
        if not logger.isEnabledFor(level):
            return False
        found = False
        while logger is not None:
            for handler in logger.handlers:
                found = True
                if level >= handler.level and type(handler) is not logging.NullHandler:
                    return True
            if not logger.propagate:
                break
            logger = logger.parent
        last = logging.lastResort
        return not found and last is not None and level >= last.level

    def _mask(self, text: str) -> str:
        """:func:`mask_text`, remembered for the last few hundred texts: validation messages and denial
        reasons carry no argument values and repeat, so a refused call's line costs no regex."""
        masked = self._masked.get(text)
        if masked is None:
            masked = mask_text(text)
            if len(self._masked) >= 512:
                self._masked.clear()
            self._masked[text] = masked
        return masked

    def redact(self, value: Any) -> Any:
        """``value`` as audit lines, plans and confirmation summaries show it."""
        return self.redaction.redact(value)

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
        if not self.writes(level):
            return
        outcome = "OK" if ok else f"ERROR:{code or 'ERROR'}"
        self._emit(
            level,
            "[ToolAudit] %s | %s | %s | %s | %dms | %s | args=%s",
            (
                ctx.request_id,
                ctx.channel,
                tool,
                ctx.principal or "anonymous",
                int(took_ms),
                outcome,
                _dump(self.redact(args)),
            ),
            {"milpa_audit": {"tool": tool, "ok": ok, "code": code, "principal": ctx.principal}},
        )

    def _emit(self, level: int, msg: str, args: tuple[Any, ...], extra: dict[str, Any] | None = None) -> None:
        logger = self.logger
        if logging.getLogRecordFactory() is not logging.LogRecord:  # the host adds fields: its factory
            logger.handle(logger.makeRecord(logger.name, level, "milpa_chat.audit", 0, msg, args, None, extra=extra))
            return
        logger.handle(_records.make(logger.name, level, msg, args, extra))

    def executed(self, ctx: ToolContext, tool: str, args: Mapping[str, Any], result: ToolResult) -> None:
        meta = result.meta
        if not self.writes(logging.INFO if result.success else logging.WARNING) and (
            meta.get("timeout_exceeded") is not True
        ):
            return
        took = meta.get("took_ms", 0)
        self.call(
            ctx,
            tool,
            args,
            result.success,
            None if result.success else (result.code or "ERROR"),
            took if isinstance(took, int | float) else 0,
        )
        if result.meta.get("timeout_exceeded") is True:
            self.timeout(ctx, tool, result.meta.get("execution_time", 0.0), result.meta.get("timeout_limit", 0))

    def failed(self, ctx: ToolContext, tool: str, args: Mapping[str, Any], took_ms: float) -> None:
        self.call(ctx, tool, args, False, "EXCEPTION", took_ms)

    def denied(self, ctx: ToolContext, tool: str, reason: str) -> None:
        if self.writes(logging.WARNING):
            masked = self._masked.get(reason)
            self._emit(
                logging.WARNING,
                "[ToolAudit] AUTH_DENIED | %s | %s | %s | %s | reason=%s",
                (
                    ctx.request_id,
                    ctx.channel,
                    tool,
                    ctx.principal or "anonymous",
                    self._mask(reason) if masked is None else masked,
                ),
            )

    def validation_failed(self, ctx: ToolContext, tool: str, errors: str) -> None:
        """``errors`` is the joined ``path: message; ...`` text (argument values are never in it;
        it is masked all the same, like every text a person reads)."""
        if self.writes(logging.WARNING):
            masked = self._masked.get(errors)
            self._emit(
                logging.WARNING,
                "[ToolAudit] VALIDATION_FAILED | %s | %s | %s | errors=%s",
                (ctx.request_id, ctx.channel, tool, self._mask(errors) if masked is None else masked),
            )

    def timeout(self, ctx: ToolContext, tool: str, execution: Any, limit: Any) -> None:
        if self.writes(logging.WARNING):
            self._emit(
                logging.WARNING,
                "[ToolRuntime] Timeout exceeded | %s | %s | %s | execution=%.3fs | limit=%gs",
                (ctx.request_id, ctx.channel, tool, float(execution), float(limit)),
            )

    def approval(
        self, event: str, approval_id: str, tool: str | None, state: str, by: str | None, via: str | None
    ) -> None:
        """One line per change of an approval (requested, decided, claimed, finished, uncertain, ...);
        a run that may or may not have taken effect is a warning."""
        level = logging.WARNING if state == "effect_uncertain" else logging.INFO
        if self.writes(level):
            self._emit(
                level,
                "[ApprovalAudit] %s | %s | %s | %s | by=%s | via=%s",
                (approval_id, event, tool or "-", state, by or "-", via or "-"),
                {"milpa_audit": {"approval": approval_id, "event": event, "state": state}},
            )

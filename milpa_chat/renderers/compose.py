"""Compose a :class:`ToolResult` into a channel-neutral :class:`Message`.

The shape comes from ``meta["type"]``: ``list`` (a page of items with Previous/Next buttons),
``detail`` (an entity and its action buttons), ``confirmation`` (Confirm/Cancel; both the
registry's confirm gate and ``ToolResult.confirmation``), ``blocked`` (reason and suggestion),
``error`` (per ``meta["code"]``, see :mod:`milpa_chat.renderers._errors`) and anything else
as a generic result. Plan-mode results (``data == {"plan": {...}}``) show as a dry run.

Buttons carry ``meta["ref"]`` when the caller set one (``result.with_meta(ref=...)``): the
opaque id the chat layer uses to find what a tap is about. Without it, confirmation buttons
use the request id and page buttons the page number alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from milpa_chat.renderers._build import Builder, Limits, when
from milpa_chat.renderers._errors import error_blocks
from milpa_chat.renderers._plain import json_document, to_plain
from milpa_chat.renderers._redact import hide_key
from milpa_chat.renderers._text import clean
from milpa_chat.renderers.model import (
    MAX_CALLBACK_BYTES,
    Actions,
    Block,
    Button,
    ButtonStyle,
    Code,
    Document,
    Heading,
    LazyDocument,
    Message,
    Note,
    Paragraph,
    Span,
    Tone,
)
from milpa_chat.runtime.result import ToolResult

__all__ = ["Limits", "compose_result", "result_document"]

_META_BUDGET = 5000
_Shape = Callable[[ToolResult, Any, Builder], tuple[list[Block], str, Tone]]


def compose_result(result: ToolResult, *, limits: Limits | None = None, redact: bool = True) -> Message:
    """The message showing ``result``. With ``redact`` (the default) the values of secret-named
    keys are hidden and secrets inside text masked everywhere, the attached document included
    (:mod:`milpa_chat.runtime.redaction`, the audit log's rule).

    Only what is shown is converted; the complete result is converted when its document is
    first asked for."""
    hide = hide_key if redact else None
    meta = to_plain(result.meta, hide, _META_BUDGET)
    view = ToolResult(result.success, result.data, result.message, result.error, meta)
    builder = Builder(limits or Limits(), hide)
    shape = _SHAPES.get(view.type, _generic)
    if not view.success and shape in (_generic, _list, _detail, _confirmation):
        shape = _error
    blocks, summary, tone = shape(view, result.data, builder)
    text_file = result.success and isinstance(result.data, str) and view.type == "generic"
    full = LazyDocument("result.txt" if text_file else "result.json", lambda: result_document(result, redact=redact))
    return Message(tuple(blocks), builder.text(summary, 200).replace("\n", " "), tone, builder.truncated, full)


def result_document(result: ToolResult, *, redact: bool = True) -> Document:
    """The whole result as a JSON file (redacted unless ``redact=False``), or a text file for a
    bare string."""
    if result.success and isinstance(result.data, str) and result.type == "generic":
        text = hide_key.mask(result.data) if redact else result.data
        return Document("result.txt", text.encode("utf-8", "replace"), "text/plain")
    plain = to_plain(result.to_dict(), hide_key if redact else None)
    return Document("result.json", json_document(plain), "application/json")


def _heading(b: Builder, text: str | None, default: str, icon: str) -> list[Block]:
    """A heading from ``text`` when it is short, else ``default`` with ``text`` below it."""
    if text and len(text) <= 120 and "\n" not in text:
        return [Heading(b.text(text, 120), icon)]
    blocks: list[Block] = [Heading(default, icon)]
    if text:
        blocks.append(Paragraph.of(b.text(text)))
    return blocks


def _generic(result: ToolResult, data: Any, b: Builder) -> tuple[list[Block], str, Tone]:
    if isinstance(data, Mapping) and len(data) == 1 and isinstance(data.get("plan"), Mapping):
        return _plan(result, data["plan"], b)
    blocks = _heading(b, result.message, "Done", "✅") + b.data(data)
    meta = result.meta
    if meta.get("timeout_exceeded") is True:
        took, limit = meta.get("execution_time"), meta.get("timeout_limit")
        blocks.append(Note(f"Took {b.value(took, 40)} s, longer than its {b.value(limit, 40)} s limit."))
    return blocks, result.message or _first_line(data) or "Done", "success"


def _plan(result: ToolResult, plan: Mapping[str, Any], b: Builder) -> tuple[list[Block], str, Tone]:
    tool = b.text(plan.get("tool") or "tool", 100)
    facts = {k: v for k, v in plan.items() if k not in ("tool", "args")}
    blocks: list[Block] = [Heading(f"Dry run: {tool}", "📝"), *b.fields(facts)]
    if "args" in plan:
        blocks.append(Paragraph.of(Span("Arguments:", "bold")))
        blocks.append(Code(b.text(_json(b.plain(plan["args"], b.limits.text_chars))), "json"))
    blocks.append(Note("Nothing was run (plan mode)."))
    return blocks, f"Dry run of {tool}", "info"


def _list(result: ToolResult, data: Any, b: Builder) -> tuple[list[Block], str, Tone]:
    items = data if isinstance(data, list | tuple) else [] if data is None else [data]
    blocks = _heading(b, result.message, "Results", "📋")
    blocks += b.items(items) if items else [Paragraph.of(Span("No results found.", "italic"))]
    pages = result.meta.get("pagination")
    summary = f"{result.message or 'Results'}: {len(items):,} items"
    if isinstance(pages, dict):
        page, total, count = (_int(pages.get(k)) for k in ("page", "total_pages", "total_items"))
        blocks.append(Note(f"Page {page:,} of {total:,} · {count:,} items in total"))
        blocks += _page_buttons(result, page, total)
        summary = f"{result.message or 'Results'}: page {page:,} of {total:,} ({count:,} items)"
    return blocks, summary, "info"


def _page_buttons(result: ToolResult, page: int, total: int) -> list[Block]:
    base = _ref(result, "", "page:99999999999:")
    row: list[Button] = []
    for label, target, show in (("◀ Previous", page - 1, page > 1), ("Next ▶", page + 1, page < total)):
        button = _button(label, "page", f"{base}:{target}" if base else str(target))
        if show and button is not None:
            row.append(button)
    return [Actions((tuple(row),))] if row else []


def _button(label: str, action: str, ref: str, style: ButtonStyle = "default") -> Button | None:
    try:
        return Button(label, action, ref, style)
    except ValueError:
        return None


def _detail(result: ToolResult, data: Any, b: Builder) -> tuple[list[Block], str, Tone]:
    entity = b.text(result.meta.get("entity") or "Item", 100)
    blocks: list[Block] = [Heading(entity, "🔎")]
    if result.message:
        blocks.append(Paragraph.of(b.text(result.message)))
    blocks += b.data(data)
    item_id = data.get("id") if isinstance(data, Mapping) else None
    fallback = _ref(result, "" if item_id is None else str(item_id), "x" * 24 + ":")
    buttons: list[Button] = []
    leftovers: list[str] = []
    for action in result.actions:
        if not isinstance(action, dict):
            continue
        name, label = str(action.get("action") or ""), str(action.get("label") or action.get("action") or "")
        style: ButtonStyle = "primary" if action.get("style") == "primary" else "default"
        style = "danger" if action.get("style") == "danger" else style
        button = b.button(label, name, str(action.get("ref") or fallback), style)
        if button is None:
            leftovers.append(f"{b.text(label, 60)} ({b.text(name, 60)})")
        else:
            buttons.append(button)
    if leftovers:
        blocks.append(Note("Other actions: " + ", ".join(leftovers)))
    if buttons:
        blocks.append(Actions((tuple(buttons),)))
    return blocks, f"{entity}: {result.message}" if result.message else entity, "info"


def _verification(result: ToolResult, data: Mapping[str, Any], b: Builder) -> tuple[list[Block], str, Tone]:
    """A ``verify=`` tool's first call: a request is waiting for other people; nothing to tap here."""
    summary = b.text(data.get("action_summary") or result.message or "", 500)
    quorum = _int(data.get("quorum") or 1)
    scopes = ", ".join(str(s) for s in data.get("approver_scopes") or []) or "any approver"
    blocks: list[Block] = [
        Heading("Waiting for approval", "⏳"),
        Paragraph.of("Requested: ", Span(summary, "code")),
        *b.fields(
            {
                "request": str(data.get("request_id", "")),
                "approvers_needed": f"{quorum} with {scopes}",
                "four_eyes": "yes — you cannot approve your own request" if data.get("four_eyes") else "no",
            }
        ),
    ]
    if data.get("expires_at"):
        blocks.append(Note(f"Expires at {when(data['expires_at'])}; nothing runs until it is approved."))
    return blocks, f"Waiting for approval: {summary}", "warning"


def _confirmation(result: ToolResult, data: Any, b: Builder) -> tuple[list[Block], str, Tone]:
    meta = result.meta
    if meta.get("requires_verification") and isinstance(data, Mapping):
        return _verification(result, data, b)
    blocks: list[Block] = [Heading("Confirmation required", "⚠️")]
    if isinstance(data, Mapping) and "action_summary" in data:  # the registry's confirm gate
        summary = b.text(data.get("action_summary"), 500)
        blocks.append(Paragraph.of("Run ", Span(summary, "code"), "?"))
        if data.get("expires_at"):
            blocks.append(Note(f"Expires at {when(data['expires_at'])}; nothing runs until you confirm."))
    else:
        summary = b.text(result.message or "Please confirm.", 500)
        blocks.append(Paragraph.of(b.text(result.message or "Please confirm.")))
        blocks += b.data(data)
        target = " ".join(b.text(meta.get(k), 80) for k in ("action", "target") if meta.get(k))
        if target:
            blocks.append(Note(f"{target} #{b.text(meta.get('target_id', ''), 80)}"))
    target_ref = f"{meta.get('target')}:{meta.get('target_id')}" if meta.get("target") else ""
    ref = _ref(result, target_ref, "confirm:")
    buttons = [_button("Confirm", "confirm", ref, "primary"), _button("Cancel", "cancel", ref)]
    blocks.append(Actions((tuple(x for x in buttons if x is not None),)))
    return blocks, f"Confirmation required: {summary}", "warning"


def _blocked(result: ToolResult, data: Any, b: Builder) -> tuple[list[Block], str, Tone]:
    reason = b.text(result.error or "This operation is blocked by a rule.")
    blocks: list[Block] = [Heading("Blocked", "⛔"), Paragraph.of(reason)]
    suggestion = result.meta.get("suggestion")
    if suggestion:
        blocks.append(Paragraph.of(Span("Suggestion: ", "bold"), b.text(suggestion)))
    return blocks, f"Blocked: {reason}", "danger"


def _error(result: ToolResult, data: Any, b: Builder) -> tuple[list[Block], str, Tone]:
    blocks, title = error_blocks(result, data, b)
    return blocks, f"{title}: {result.error or 'unknown error'}", "danger"


_SHAPES: dict[str, _Shape] = {
    "generic": _generic,
    "list": _list,
    "detail": _detail,
    "confirmation": _confirmation,
    "blocked": _blocked,
    "error": _error,
}


def _ref(result: ToolResult, fallback: str, prefix: str) -> str:
    """The first of ``meta.ref``, ``meta.approval_id``, ``fallback``, ``meta.request_id`` that fits
    in Telegram's callback data after ``prefix``; else ``""``."""
    meta = result.meta
    room = MAX_CALLBACK_BYTES - len(prefix.encode())
    for candidate in (meta.get("ref"), meta.get("approval_id"), fallback, meta.get("request_id")):
        if isinstance(candidate, str | int) and not isinstance(candidate, bool):
            text = str(candidate)
            if text and clean(text) == text and len(text.encode("utf-8", "surrogatepass")) <= room:
                return text
    return ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def _first_line(data: Any) -> str:
    if isinstance(data, str | int | float) and not isinstance(data, bool):
        return str(data).split("\n", 1)[0][:200]
    return ""

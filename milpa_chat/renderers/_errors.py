"""Error results, per ``meta["code"]``.

What each code reads (all optional; the error text is always shown):

* ``VALIDATION_ERROR``: the problems from ``meta["errors"]`` (strings, or dicts with
  ``path``/``field``/``loc`` and ``message``/``msg``), else ``data["errors"]``, else ``data``
  ``{field, message}``, else the error text split at ``"; "`` (the runtime's join).
* ``FORBIDDEN``: the error text is the reason.
* ``RATE_LIMITED``: ``meta["retry_after_seconds"]`` (or ``retry_after``) says when to retry.
* ``TOOL_NOT_FOUND``: ``data["suggestions"]`` (what the registry sends) or
  ``meta["suggestions"]``, else the closest of ``meta["available"]`` to ``meta["tool"]``; a
  "Did you mean" already in the error text is shown once, as code spans.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from itertools import islice
from typing import Any

from milpa_chat.renderers._build import Builder
from milpa_chat.renderers.model import Block, Heading, ItemList, Note, Paragraph, Span
from milpa_chat.runtime.result import ToolResult

__all__ = ["error_blocks"]

_DID_YOU_MEAN = re.compile(r"\s*Did you mean:? [^\n]*\?\s*$")
_TITLES: dict[str, tuple[str, str]] = {
    "VALIDATION_ERROR": ("Invalid arguments", "⚠️"),
    "FORBIDDEN": ("Not allowed", "🚫"),
    "RATE_LIMITED": ("Too many requests", "⏳"),
    "TOOL_NOT_FOUND": ("Unknown tool", "❓"),
    "NOT_FOUND": ("Not found", "🔍"),
    "UNAUTHORIZED": ("Sign-in required", "🔒"),
    "TIMEOUT": ("Timed out", "⏱️"),
    "INTERNAL_ERROR": ("Something went wrong", "❌"),
    "CONFIRMATION_REQUIRED": ("Confirmation required", "⚠️"),
}


def error_blocks(result: ToolResult, data: Any, b: Builder) -> tuple[list[Block], str]:
    """The blocks of a failed result and its title."""
    code = result.code or ""
    title, icon = _TITLES.get(code, ("Error", "❌"))
    blocks: list[Block] = [Heading(title, icon)]
    if code == "VALIDATION_ERROR":
        blocks += _validation(result, data, b)
    else:
        text = result.error or "Unknown error"
        if code == "TOOL_NOT_FOUND":
            text = _DID_YOU_MEAN.sub("", text).rstrip() or text
        blocks.append(Paragraph.of(b.text(text)))
        blocks += _EXTRA.get(code, _data_blocks)(result, data, b)
    facts = [
        f"{name}: {b.text(result.meta[key], 80)}"
        for name, key in (("Tool", "tool"), ("Request", "request_id"))
        if result.meta.get(key)
    ]
    if facts:
        blocks.append(Note(" · ".join(facts)))
    return blocks, title


def _data_blocks(result: ToolResult, data: Any, b: Builder) -> list[Block]:
    return b.data(data)


def _validation(result: ToolResult, data: Any, b: Builder) -> list[Block]:
    problems = _problems(result.meta.get("errors"))
    if not problems and isinstance(data, Mapping):
        problems = _problems(data.get("errors")) or _problems([data] if "message" in data else None)
    if not problems:
        problems = [p for p in (result.error or "").split("; ") if p.strip()]
    if not problems:
        return [Paragraph.of("The arguments are not valid.")]
    shown = problems[: b.limits.items]
    blocks: list[Block] = [Paragraph.of("Please fix:"), ItemList(tuple(b.text(p, b.limits.value_chars) for p in shown))]
    if len(problems) > len(shown):
        b.truncated = True
        blocks.append(Note(f"… and {len(problems) - len(shown):,} more problems"))
    return blocks


def _problems(raw: Any) -> list[str]:
    if not isinstance(raw, list | tuple):
        return []
    out: list[str] = []
    for item in islice(raw, 1000):
        if isinstance(item, Mapping):
            where = item.get("path") or item.get("field") or item.get("loc")
            if isinstance(where, list | tuple):
                where = ".".join(str(p) for p in islice(where, 20))
            text = str(item.get("message") or item.get("msg") or "invalid")
            out.append(f"{where}: {text}" if where else text)
        elif item is not None:
            out.append(str(item))
    return out


def _rate_limited(result: ToolResult, data: Any, b: Builder) -> list[Block]:
    wait = result.meta.get("retry_after_seconds", result.meta.get("retry_after"))
    if isinstance(wait, int | float) and not isinstance(wait, bool) and wait > 0:
        seconds = int(wait) if float(wait).is_integer() else round(float(wait), 1)
        unit = "second" if seconds == 1 else "seconds"
        return [Paragraph.of(Span(f"Try again in {seconds:,} {unit}.", "bold"))]
    return [Paragraph.of(Span("Try again in a little while.", "bold"))]


def _not_found(result: ToolResult, data: Any, b: Builder) -> list[Block]:
    meta = result.meta
    names = data.get("suggestions") if isinstance(data, Mapping) else None
    names = names or meta.get("suggestions") or meta.get("did_you_mean")
    if not isinstance(names, list | tuple) or not names:
        names = []
        available, wanted = meta.get("available"), meta.get("tool")
        if isinstance(available, list) and isinstance(wanted, str):
            names = difflib.get_close_matches(wanted, [str(a) for a in available], n=3, cutoff=0.5)
    names = [str(n) for n in islice(names, 5) if n is not None]
    if not names:
        return []
    parts: list[str | Span] = ["Did you mean "]
    for i, name in enumerate(names):
        if i:
            parts.append(" or " if i == len(names) - 1 else ", ")
        parts.append(Span(b.text(name, 100), "code"))
    parts.append("?")
    return [Paragraph.of(*parts)]


_EXTRA = {"RATE_LIMITED": _rate_limited, "TOOL_NOT_FOUND": _not_found}

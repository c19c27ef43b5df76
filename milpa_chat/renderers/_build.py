"""Building blocks from untrusted data, within limits, remembering what was shortened."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from milpa_chat.renderers._text import clean, clip, label, value_text
from milpa_chat.renderers.model import Block, Button, ButtonStyle, Fields, ItemList, Note, Paragraph, Table

__all__ = ["Builder", "Limits", "when"]

_TITLE_KEYS = ("id", "nombre", "name", "title")


@dataclass(frozen=True, slots=True)
class Limits:
    """How much of a result a channel shows before shortening it (the rest goes to a document).

    ``value_chars``: one value (a field, a scalar); ``text_chars``: a message, an error or a
    code block; ``cell_chars``: one table cell; ``items``: list items or table rows;
    ``fields``: keys of a dict; ``columns``: table columns.
    """

    value_chars: int = 1000
    text_chars: int = 3000
    cell_chars: int = 80
    items: int = 100
    fields: int = 40
    columns: int = 6


def when(value: Any) -> str:
    """A timestamp as ``2026-08-15 14:08 UTC``; ISO strings are parsed, other text is kept
    (at most 80 characters of it)."""
    moment = value
    if isinstance(value, str):
        try:
            moment = _dt.datetime.fromisoformat(value)
        except ValueError:
            moment = None
    if isinstance(moment, _dt.datetime):
        if moment.tzinfo is not None:
            moment = moment.astimezone(_dt.UTC)
        return moment.strftime("%Y-%m-%d %H:%M UTC")
    text, omitted = clip(clean(str(value)), 80)
    return text + "…" if omitted else text


class Builder:
    """Turns plain data into blocks for one message; ``truncated`` tells whether it cut anything."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.truncated = False

    def text(self, value: Any, limit: int | None = None) -> str:
        """Cleaned text, clipped to ``limit`` (default ``text_chars``) with a visible marker."""
        raw = value if isinstance(value, str) else value_text(value)
        limit = self.limits.text_chars if limit is None else limit
        head, omitted = clip(raw, limit)  # clip first: cleaning a megabyte to show a line is waste
        kept, more = clip(clean(head), limit)
        omitted += more
        if omitted:
            self.truncated = True
            return f"{kept}… [+{omitted:,} characters]"
        return kept

    def value(self, value: Any, limit: int | None = None) -> str:
        return self.text(value_text(value), self.limits.value_chars if limit is None else limit)

    def button(self, label_: str, action: str, ref: str, style: ButtonStyle = "default") -> Button | None:
        """A button, or ``None`` when the data cannot make a valid one (too long, bad action)."""
        text = self.text(label_, 60).replace("\n", " ") or action
        try:
            return Button(text, action, ref, style)
        except ValueError:
            return None

    def fields(self, data: dict[str, Any]) -> list[Block]:
        items = list(data.items())
        shown = tuple((self.text(label(k), 100), self.value(v)) for k, v in items[: self.limits.fields])
        blocks: list[Block] = [Fields(shown)] if shown else []
        if len(items) > self.limits.fields:
            self.truncated = True
            blocks.append(Note(f"… and {len(items) - self.limits.fields:,} more fields"))
        return blocks

    def data(self, data: Any) -> list[Block]:
        """Blocks showing any plain value: nothing, text, fields, a table or a list."""
        if data is None or data == {} or data == []:
            return []
        if isinstance(data, dict):
            return self.fields(data)
        if isinstance(data, list):
            return self.items(data)
        return [Paragraph.of(self.value(data, self.limits.text_chars))]

    def items(self, items: Sequence[Any]) -> list[Block]:
        """A table when the items are records, otherwise a bulleted list."""
        shown = items[: self.limits.items]
        if shown and all(isinstance(i, dict) for i in shown):
            blocks: list[Block] = [self.table(shown)]
        else:
            cells = tuple(self.value(i, self.limits.value_chars) for i in shown)
            blocks = [ItemList(cells)]
        if len(items) > len(shown):
            self.truncated = True
            blocks.append(Note(f"… and {len(items) - len(shown):,} more items"))
        return blocks

    def table(self, records: Sequence[dict[str, Any]]) -> Table:
        columns = _columns(records)
        if len(columns) > self.limits.columns:
            self.truncated = True
            columns = columns[: self.limits.columns]
        title = sum(1 for c in columns[:2] if c in _TITLE_KEYS)
        cell = self.limits.cell_chars
        rows = tuple(tuple(self.value(r.get(c), cell) if c in r else "" for c in columns) for r in records)
        heads = tuple(self.text(label(c), 60) for c in columns)
        return Table(heads, rows, title)


def _columns(records: Sequence[dict[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for record in records:
        for key in record:
            seen.setdefault(key, None)
    keys = list(seen)
    front = [k for k in ("id",) if k in seen]
    front += [k for k in _TITLE_KEYS[1:] if k in seen][:1]
    return front + [k for k in keys if k not in front]

"""Building blocks from untrusted data, within limits, remembering what was shortened."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Any

from milpa_chat.renderers._plain import REDACTED, plain_key, to_plain_within
from milpa_chat.renderers._text import clean, clip, label, scalar_text, value_text
from milpa_chat.renderers.model import Block, Button, ButtonStyle, Fields, ItemList, Note, Paragraph, Table
from milpa_chat.runtime.redaction import Redaction

__all__ = ["Builder", "Limits", "when"]

_TITLE_KEYS = ("id", "nombre", "name", "title")
#: Text is masked a little beyond what is shown, so a secret cut by the limit is still recognised.
_MASK_MARGIN = 2048


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
        # ``strftime("%Y-%m-%d %H:%M UTC")``, without the C library's strftime (a card shows one or two)
        return f"{moment.year}-{moment.month:02d}-{moment.day:02d} {moment.hour:02d}:{moment.minute:02d} UTC"
    text, omitted = clip(clean(str(value)), 80)
    return text + "…" if omitted else text


class Builder:
    """Turns a result's data into blocks for one message, converting (and redacting with
    ``hide``) only what it shows; ``truncated`` tells whether it left anything out. When ``hide`` is
    a :class:`~milpa_chat.runtime.redaction.Redaction`, every text shown is masked too."""

    def __init__(self, limits: Limits, hide: Callable[[str], bool] | None = None) -> None:
        self.limits = limits
        self.hide = hide
        self.mask: Callable[[str], str] | None = hide.mask if isinstance(hide, Redaction) else None
        self.truncated = False

    def plain(self, value: Any, budget: int | None = None) -> Any:
        """``value`` as redacted plain data, within ``budget`` values (default ``value_chars``)."""
        plain, cut = to_plain_within(value, self.hide, budget or self.limits.value_chars)
        self.truncated = self.truncated or cut
        return plain

    def text(self, value: Any, limit: int | None = None) -> str:
        """Cleaned text, clipped to ``limit`` (default ``text_chars``) with a visible marker."""
        limit = self.limits.text_chars if limit is None else limit
        kind = type(value)
        if kind is str:
            if len(value) <= limit:  # a short string: masked and cleaned, never clipped
                shown = value if self.mask is None else self.mask(value)
                if not shown.isprintable():  # (printable text is clean already, see clean)
                    shown = clean(shown)
                if len(shown) <= limit:
                    return shown
        elif kind is int or kind is bool or value is None:  # nothing to convert, mask or clean: a word or digits
            shown = scalar_text(value)
            if len(shown) <= limit:
                return shown
        return self._clipped(value, limit)

    def _clipped(self, value: Any, limit: int) -> str:
        """:meth:`text` of a value that may not fit ``limit``: converted, masked, clipped, then cleaned."""
        raw = value if isinstance(value, str) else value_text(self.plain(value))
        if self.mask is not None and isinstance(value, str):  # (converted values are masked already)
            wide, omitted = clip(raw, limit + _MASK_MARGIN)
            masked = self.mask(wide)
            if omitted and len(masked) < limit + _MASK_MARGIN // 2:  # masks shrank it: the cut tail could show
                masked, omitted = self.mask(raw), 0
            head, more = clip(masked, limit)
            omitted += more
        else:
            head, omitted = clip(raw, limit)  # clip first: cleaning a megabyte to show a line is waste
        kept, more = clip(clean(head), limit)
        omitted += more
        if omitted:
            self.truncated = True
            return f"{kept}… [+{omitted:,} characters]"
        return kept

    def value(self, value: Any, limit: int | None = None) -> str:
        return self.text(value, self.limits.value_chars if limit is None else limit)

    def secret(self, key: str) -> bool:
        return self.hide is not None and self.hide(key)

    def button(self, label_: str, action: str, ref: str, style: ButtonStyle = "default") -> Button | None:
        """A button, or ``None`` when the data cannot make a valid one (too long, bad action)."""
        text = self.text(label_, 60).replace("\n", " ") or action
        try:
            return Button(text, action, ref, style)
        except ValueError:
            return None

    def fields(self, data: Mapping[Any, Any]) -> list[Block]:
        shown = []
        for k, v in islice(data.items(), self.limits.fields):
            key = plain_key(k)
            if key != "_ctx":
                shown.append((self.text(label(key), 100), REDACTED if self.secret(key) else self.value(v)))
        blocks: list[Block] = [Fields(tuple(shown))] if shown else []
        if len(data) > self.limits.fields:
            self.truncated = True
            blocks.append(Note(f"… and {len(data) - self.limits.fields:,} more fields"))
        return blocks

    def data(self, data: Any) -> list[Block]:
        """Blocks showing any value: nothing, text, fields, a table or a list."""
        if isinstance(data, Mapping):
            return self.fields(data) if data else []
        if isinstance(data, list | tuple | set | frozenset):
            return self.items(data) if data else []
        if data is None:
            return []
        if isinstance(data, str | int | float | bool):
            return [Paragraph.of(self.value(data, self.limits.text_chars))]
        plain = self.plain(data, self.limits.items * self.limits.fields)  # a model, a dataclass, ...
        return self.data(plain) if isinstance(plain, dict | list) else [Paragraph.of(self.value(plain))]

    def items(self, items: Collection[Any]) -> list[Block]:
        """A table when the items are records, otherwise a bulleted list."""
        shown = [
            i if type(i) is dict or isinstance(i, Mapping | str | int | float) or i is None else self.plain(i)
            for i in islice(items, self.limits.items)
        ]
        records = [i for i in shown if type(i) is dict or isinstance(i, Mapping)]
        if shown and len(records) == len(shown):  # all of them records
            blocks: list[Block] = [self.table(records)]
        else:
            blocks = [ItemList(tuple(self.value(i) for i in shown))]
        if len(items) > len(shown):
            self.truncated = True
            blocks.append(Note(f"… and {len(items) - len(shown):,} more items"))
        return blocks

    def table(self, records: list[Mapping[Any, Any]]) -> Table:
        plain = True  # dicts keyed by strings already (most records): looked up as they are
        for r in records:
            if type(r) is not dict:
                plain = False
                break
            for k in r:
                if type(k) is not str:
                    plain = False
                    break
            if not plain:
                break
        rows_by_key: list[dict[str, Any]] = (
            records  # type: ignore[assignment]
            if plain
            else [{plain_key(k): v for k, v in r.items()} for r in records]
        )
        columns = [c for c in _columns(rows_by_key) if c != "_ctx"]
        if len(columns) > self.limits.columns:
            self.truncated = True
            columns = columns[: self.limits.columns]
        hidden = {c for c in columns if self.secret(c)}  # once per column, not once per cell
        rows = tuple(tuple(self._cells(r, columns, hidden)) for r in rows_by_key)
        title = sum(1 for c in columns[:2] if c in _TITLE_KEYS)
        return Table(tuple(self.text(label(c), 60) for c in columns), rows, title)

    def _cells(self, row: dict[str, Any], columns: list[str], hidden: set[str]) -> list[str]:
        """One table row: each column's value on one line, ``""`` where the record has none."""
        cells = []
        text, limit = self.text, self.limits.cell_chars
        for column in columns:
            if column not in row:
                cells.append("")
            elif column in hidden:
                cells.append(REDACTED)
            else:
                value = row[column]
                if type(value) is int:  # digits: what text() shows of it, when they fit
                    shown = str(value)
                    if len(shown) <= limit:
                        cells.append(shown)
                        continue
                cells.append(text(value, limit).replace("\n", " "))
        return cells


def _columns(records: list[dict[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for record in records:
        for key in record:
            seen.setdefault(key, None)
    front = [k for k in ("id",) if k in seen]
    front += [k for k in _TITLE_KEYS[1:] if k in seen][:1]
    return front + [k for k in seen if k not in front]

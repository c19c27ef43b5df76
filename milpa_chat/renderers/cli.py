"""CLI: plain text for a terminal, readable without colour.

No escape sequence ever reaches the terminal: control characters from data are shown as
``⟨U+001B⟩`` (see :func:`milpa_chat.renderers._text.clean`). Columns are aligned by display
width (wide East Asian characters and emoji count two cells, combining marks none).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import ClassVar, Final

from milpa_chat.renderers._build import Limits
from milpa_chat.renderers._text import clean
from milpa_chat.renderers.base import MessageRenderer
from milpa_chat.renderers.model import (
    Actions,
    Block,
    Code,
    Divider,
    Fields,
    Heading,
    ItemList,
    Message,
    Note,
    Paragraph,
    Table,
)

__all__ = ["CliRenderer", "display_width"]

_MAX_LABEL: Final = 24
_MAX_CELL: Final = 40


def display_width(text: str) -> int:
    """Terminal cells ``text`` takes (wide/fullwidth 2, combining marks and joiners 0, a symbol
    followed by the emoji variation selector 2)."""
    if text.isascii():
        return len(text)
    width = 0
    for ch in text:
        if ch == "\ufe0f":  # emoji presentation: the narrow symbol before it (✈, ⚠) shows wide
            width += 1
        elif not (unicodedata.combining(ch) or unicodedata.category(ch) in ("Cf", "Mn", "Me")):
            width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def _fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells (with ``…``) and padded with spaces to exactly ``width``."""
    long = len(text) > 4 * width  # measure only what can be shown
    text = text[: 4 * width] if long else text
    if long or display_width(text) > width:
        out, used = [], 0
        for ch in text:
            w = display_width(ch)
            if used + w > width - 1:
                break
            out.append(ch)
            used += w
        text = "".join(out) + "…"
    return text + " " * (width - display_width(text))


class CliRenderer(MessageRenderer[str]):
    """Renders for the ``cli`` and ``tui`` channels (and serves as the default renderer)."""

    channels: ClassVar[tuple[str, ...]] = ("cli", "tui")
    default_limits: ClassVar[Limits] = Limits(value_chars=2000, text_chars=5000, cell_chars=40, items=500)

    def render_message(self, message: Message) -> str:
        parts = [_EMIT[type(block)](block) for block in message.blocks]
        if message.truncated:
            parts.append("(Shortened for display.)")
        text = clean("\n\n".join(p for p in parts if p.strip())).rstrip()
        return (text or clean(message.summary).strip() or "(empty message)") + "\n"


def _heading(block: Block) -> str:
    assert isinstance(block, Heading)
    text = f"{block.icon} {block.text}".strip()
    return text + "\n" + "─" * min(max(display_width(text), 8), 72)


def _paragraph(block: Block) -> str:
    assert isinstance(block, Paragraph)
    marks = {"plain": "", "bold": "", "italic": "", "code": "`"}
    return "".join(marks[s.style] + s.text + marks[s.style] for s in block.spans)


def _fields(block: Block) -> str:
    assert isinstance(block, Fields)
    width = min(max((display_width(k) for k, _ in block.items), default=0) + 1, _MAX_LABEL)
    lines = []
    for key, value in block.items:
        first, *rest = value.split("\n")
        lines.append(f"{_fit(key + ':', width)} {first}".rstrip())
        lines += [" " * (width + 1) + line for line in rest]
    return "\n".join(lines)


def _items(block: Block) -> str:
    assert isinstance(block, ItemList)
    lines = []
    for n, item in enumerate(block.items, 1):
        first, *rest = item.split("\n")
        lines.append((f"{n}. " if block.ordered else "• ") + first)
        lines += ["   " + line for line in rest]
    return "\n".join(lines)


def _table(block: Block) -> str:
    assert isinstance(block, Table)
    cells = [[c[: 4 * _MAX_CELL] for c in row] for row in block.rows]
    widths = [
        min(max([display_width(c), *(display_width(r[i]) for r in cells if i < len(r))]), _MAX_CELL)
        for i, c in enumerate(block.columns)
    ]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(_fit(cell, w) for cell, w in zip(cells, widths, strict=False)).rstrip()

    rule = "  ".join("─" * w for w in widths)
    return "\n".join([line(block.columns), rule, *(line(tuple(row)) for row in cells)])


def _code(block: Block) -> str:
    assert isinstance(block, Code)
    return "\n".join("    " + line for line in block.text.split("\n"))


def _note(block: Block) -> str:
    assert isinstance(block, Note)
    return "· " + block.text


def _actions(block: Block) -> str:
    assert isinstance(block, Actions)
    return "\n".join("  ".join(f"[ {b.label} ]" for b in row) for row in block.rows)


_EMIT: Final[dict[type, Callable[[Block], str]]] = {
    Heading: _heading,
    Paragraph: _paragraph,
    Fields: _fields,
    ItemList: _items,
    Table: _table,
    Code: _code,
    Note: _note,
    Divider: lambda b: "─" * 24,
    Actions: _actions,
}

"""Escaping and hard-wrapping lines of styled text for the markup channels (Telegram, Slack).

A line is a list of :data:`Seg` ``(open, close, raw)``: markup around raw text. Both Telegram
HTML and Slack mrkdwn escape exactly ``& < >`` (``&amp; &lt; &gt;``); :func:`wrap_line` cuts a
line whose escaped form is too long into pieces that each close the markup they open and
never cut an entity, a surrogate pair or a combining sequence.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final, TypeAlias

from milpa_chat.renderers._text import clean, joins_previous, utf16_len

if TYPE_CHECKING:
    from milpa_chat.renderers.model import Table

__all__ = ["LINE_BUDGET", "Seg", "escape", "table_row", "take", "wrap_line"]

Seg: TypeAlias = tuple[str, str, str]
#: Default size of one wrapped piece: a Telegram message less room for a ``<pre><code>`` wrapper.
LINE_BUDGET: Final = 4000


def escape(text: str) -> str:
    """``& < >`` as ``&amp; &lt; &gt;`` (Telegram HTML text and Slack mrkdwn alike): what
    ``html.escape(text, quote=False)`` does, without its extra call."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def wrap_line(line: list[Seg], budget: int = LINE_BUDGET) -> list[str]:
    """One logical line, cleaned and escaped, cut into pieces of at most ``budget`` UTF-16
    units; each piece closes the markup it opens. Empty segments are dropped."""
    # (plain loops: a comprehension is a call of its own, three a line of every message)
    text = markup = ""
    for open_, close, raw in line:
        text += raw
        markup += open_ + close
    if not text.isprintable():  # (printable text is clean already, see clean)
        line = [(open_, close, clean(raw)) for open_, close, raw in line]
        text = "".join([raw for _, _, raw in line])
    # Escaping makes a character at most 5 UTF-16 units (``&amp;``): a line within budget at that rate
    # is one piece, joined without measuring it.
    if 5 * len(text) + len(markup) > budget:
        return _wrap(line, budget)
    escaping = "&" in text or "<" in text or ">" in text
    out = ""
    for open_, close, raw in line:
        if raw:
            out += open_ + (escape(raw) if escaping else raw) + close
    return [out]


def _wrap(line: list[Seg], budget: int) -> list[str]:
    out: list[str] = []
    current: list[str] = []
    size = 0
    for open_, close, rest in line:
        overhead = len(open_) + len(close)
        while rest:
            piece, after = take(rest, budget - size - overhead)
            if not piece and current:  # no room left on this piece of the line: start the next
                out.append("".join(current))
                current, size = [], 0
                continue
            if not piece:  # cannot happen with a sane budget; still guarantees progress
                piece, after = rest[:1], rest[1:]
            escaped = escape(piece)
            current.append(open_ + escaped + close)
            size += overhead + utf16_len(escaped)
            rest = after
            if rest:
                out.append("".join(current))
                current, size = [], 0
    if current or not out:
        out.append("".join(current))
    return out


def _escaped_len(text: str) -> int:
    """``utf16_len(escape(text))`` without building the escaped string."""
    return utf16_len(text) + 4 * text.count("&") + 3 * (text.count("<") + text.count(">"))


def take(text: str, room: int) -> tuple[str, str]:
    """The longest prefix of ``text`` whose escaped form fits ``room`` units (preferring a cut
    after a space, not inside a combining sequence), and the rest."""
    if room <= 0:
        return "", text
    if len(text) * 5 <= room or (len(text) <= room and utf16_len(escape(text)) <= room):
        return text, ""
    low, high = 0, min(len(text), room)  # binary search: the longest prefix that fits
    while low < high:
        mid = (low + high + 1) // 2
        if _escaped_len(text[:mid]) <= room:
            low = mid
        else:
            high = mid - 1
    cut = low
    space = text.rfind(" ", 0, cut)
    if space > cut * 3 // 4:
        return text[: space + 1], text[space + 1 :]
    whole = cut
    while cut > 0 and (joins_previous(text[cut]) or text[cut - 1] == "\u200d"):
        cut -= 1
    cut = cut or whole  # one endless combining sequence: cut it anyway
    return text[:cut], text[cut:]


def table_row(table: Table, row: tuple[str, ...], bold: Callable[[str], list[Seg]]) -> list[Seg]:
    """One table row as one line: ``• #id title — Column: value · Column: value`` (empty cells left out), the
    first title in the channel's ``bold``."""
    segs: list[Seg] = [("", "", "• ")]
    n = table.title_columns
    titles = [c for c in row[:n] if c]
    if titles:
        first = titles[0]
        segs += bold(f"#{first}" if table.columns[0] == "Id" else first)
        segs += [("", "", f" {title}") for title in titles[1:]]
    sep = " — " if titles else ""
    for column, value in zip(table.columns[n:], row[n:], strict=False):
        if value:
            segs.append(("", "", f"{sep}{column}: {value}"))
            sep = " · "
    return segs

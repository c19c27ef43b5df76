"""``Canonical``: the one spelling of a grant, and how a text is said back to the person reading it.

* :meth:`Canonical.json` — compact JSON, every map's keys sorted by their bytes, lists left alone;
  :meth:`Canonical.digest` — ``sha256:<hex>`` of it.
* :meth:`Canonical.one_line` — whether a text is one line of plain text, with nothing in it that is
  not seen (read from the shipped Unicode 16 tables, whatever the interpreter's own version).
* :meth:`Canonical.shown` — a value as JSON spells it, in plain ASCII, at most a line of it.
* :meth:`Canonical.said` — a host's sentence repeated as it came when it is one line of plain text.
* :meth:`Canonical.short` — an operation name, whole when it fits on a line.
"""

from __future__ import annotations

import bisect
import hashlib
import json as _json
from collections.abc import Mapping
from typing import Any, Final

from milpa_chat.command import _unicode16

__all__ = ["LINE", "MARKS_IN_A_ROW", "UNIDATA_VERSION", "Canonical"]

#: How many characters "a line" is, for :meth:`Canonical.shown`, :meth:`~Canonical.said` and :meth:`~Canonical.short`.
LINE: Final = 480
#: The most combining marks one line may carry in a row.
MARKS_IN_A_ROW: Final = 8
#: The Unicode version of the tables :meth:`Canonical.one_line` reads.
UNIDATA_VERSION: Final = _unicode16.UNIDATA_VERSION


def _starts(table: tuple[tuple[int, int], ...]) -> tuple[list[int], list[int]]:
    return [a for a, _ in table], [b for _, b in table]


_REFUSED_START, _REFUSED_END = _starts(_unicode16.REFUSED)
_MARK_START, _MARK_END = _starts(_unicode16.MARKS)


def _within(cp: int, starts: list[int], ends: list[int]) -> bool:
    i = bisect.bisect_right(starts, cp) - 1
    return i >= 0 and cp <= ends[i]


def refused_character(char: str) -> bool:
    """Whether one line of plain text may never hold ``char`` (a control, format, invisible, unassigned...)."""
    return _within(ord(char), _REFUSED_START, _REFUSED_END)


def combining_mark(char: str) -> bool:
    """Whether ``char`` is a combining mark (general category M) under Unicode 16."""
    return _within(ord(char), _MARK_START, _MARK_END)


def _plain(value: Any, path: str) -> Any:
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        raise TypeError(
            f"Canonical.json: {path} is a float ({value!r}); a grant carries whole numbers only, "
            f"since a float's spelling does not survive a reading"
        )
    if isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                raise TypeError(f"Canonical.json: {path} has a key that is not a text ({key!r})")
        ordered = sorted(value, key=lambda k: k.encode("utf-8", "surrogatepass"))
        return {key: _plain(value[key], f"{path}.{key}") for key in ordered}
    if isinstance(value, list | tuple):
        return [_plain(item, f"{path}[{i}]") for i, item in enumerate(value)]
    raise TypeError(
        f"Canonical.json: {path} is a {type(value).__name__}; it spells maps, lists, texts, whole numbers, "
        f"true/false and null only"
    )


def _cut(spelled: str, limit: int) -> str:
    """``spelled`` cut to at most ``limit`` characters without splitting an escape, then ``...``."""
    if len(spelled) <= limit:
        return spelled
    end = 0
    while end < len(spelled):
        step = 6 if spelled.startswith("\\u", end) else 2 if spelled[end] == "\\" else 1
        if end + step > limit:
            break
        end += step
    return spelled[:end] + "..."


class Canonical:
    """Spelling helpers (all static): one canonical JSON, and what a reader is shown."""

    __slots__ = ()

    @staticmethod
    def json(value: Any) -> str:
        """Compact JSON with every map's keys sorted by their UTF-8 bytes; lists keep their order.

        Slashes and non-ASCII are written as they are; an empty map is ``{}``. Floats, non-text keys
        and anything that is not a map, list, text, whole number, boolean or ``None`` raise
        ``TypeError`` rather than being guessed at. A text that is not valid Unicode (a lone
        surrogate) raises ``ValueError``.
        """
        text = _json.dumps(_plain(value, "$"), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"Canonical.json: a text in the value is not valid Unicode ({exc.reason})") from None
        return text

    @staticmethod
    def digest(value: Any) -> str:
        """``"sha256:" + hex`` of :meth:`json` of ``value``."""
        return "sha256:" + hashlib.sha256(Canonical.json(value).encode("utf-8")).hexdigest()

    @staticmethod
    def one_line(text: object) -> bool:
        """Whether ``text`` is one non-empty line of plain text with nothing in it that is not seen.

        Refused: anything that is not a ``str`` of Unicode scalar values, the empty text, U+0020 at
        either end, control and format characters, the line and paragraph separators, every space
        but U+0020, variation selectors, the combining grapheme joiner, the characters that print as
        nothing, private use and unassigned code points (Unicode 16), a text that begins with a
        combining mark, and more than eight combining marks in a row.
        """
        if type(text) is not str or text == "" or text[0] == " " or text[-1] == " ":
            return False
        run = 0
        for index, char in enumerate(text):
            cp = ord(char)
            if 0x20 <= cp < 0x7F:
                run = 0
                continue
            if _within(cp, _REFUSED_START, _REFUSED_END):
                return False
            if _within(cp, _MARK_START, _MARK_END):
                run += 1
                if index == 0 or run > MARKS_IN_A_ROW:
                    return False
            else:
                run = 0
        return True

    @staticmethod
    def shown(value: Any) -> str:
        """``value`` as JSON spells it, in plain ASCII, at most a line (480 characters) of it.

        A text is shown between its quotes (``"no-host-names"``), so a quote inside it is ``\\"`` and
        cannot end it early; non-ASCII is ``\\uXXXX``, control characters are escaped, and what is
        not valid Unicode shows as ``\\ufffd``. A longer spelling is cut where no escape is split,
        followed by ``...``.
        """
        try:
            spelled = _json.dumps(_unsurrogated(value), ensure_ascii=True, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError):
            spelled = _json.dumps(_unsurrogated(repr(value)), ensure_ascii=True)
        return _cut(spelled.replace("\x7f", "\\u007f"), LINE)

    @staticmethod
    def said(sentence: object) -> str:
        """A host's sentence as it came when it is one line of plain text (its first 480 characters); else shown."""
        if isinstance(sentence, str) and Canonical.one_line(sentence):
            return sentence[:LINE]
        return Canonical.shown(sentence)

    @staticmethod
    def short(name: str) -> str:
        """An operation name whole when it is at most a line; its start and its length otherwise."""
        if len(name) <= LINE:
            return name
        return f"{name[:LINE]}... ({len(name)} characters)"


def _unsurrogated(value: Any) -> Any:
    if isinstance(value, str):
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value) if _has_surrogate(value) else value
    if isinstance(value, Mapping):
        return {(_unsurrogated(k) if isinstance(k, str) else k): _unsurrogated(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_unsurrogated(v) for v in value]
    return value


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False

"""Text helpers shared by every renderer: cleaning, clipping, labels and value formatting.

Everything a tool returns is untrusted. Before any channel escapes it, :func:`clean` makes
characters that hide or reorder text visible (``⟨U+202E⟩``), so an approver always sees the
arguments they approve. :func:`to_plain` turns any Python value into plain JSON data.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import json
import math
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

__all__ = ["clean", "clip", "joins_previous", "json_text", "label", "to_plain", "utf16_len", "value_text"]

# C0/C1 controls (not \t \n), bidi embeddings/overrides/isolates, invisible spaces and
# joiners that are never needed (ZWJ/ZWNJ stay: emoji sequences and many scripts need
# them), line/paragraph separators, and lone surrogates.
_HIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u180e\u200b\u2028\u2029\u202a-\u202e"
    "\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb\ud800-\udfff]"
)
_NEWLINES = {"\u2028": "\n", "\u2029": "\n"}
_MAX_DEPTH = 64


def _visible(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _NEWLINES:
        return _NEWLINES[ch]
    if "\ud800" <= ch <= "\udfff":
        return "\ufffd"
    return f"⟨U+{ord(ch):04X}⟩"


def clean(text: str) -> str:
    """``text`` with CR/CRLF as ``\\n`` and hidden or reordering characters made visible."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if _HIDDEN.search(text) is None:
        return text
    return _HIDDEN.sub(_visible, text)


def joins_previous(ch: str) -> bool:
    """True for a character that belongs to the one before it (combining mark, joiner, variation selector)."""
    return bool(unicodedata.combining(ch)) or ch in "\u200c\u200d" or "\ufe00" <= ch <= "\ufe0f"


def clip(text: str, limit: int) -> tuple[str, int]:
    """The first ``limit`` characters of ``text`` (never splitting a base character from its
    combining marks or a ZWJ sequence) and the number of characters left out."""
    if len(text) <= limit:
        return text, 0
    cut = whole = max(limit, 0)
    while cut > 0 and (joins_previous(text[cut]) or text[cut - 1] == "\u200d"):
        cut -= 1
    cut = cut or whole  # one endless combining sequence: cut inside it rather than drop it all
    return text[:cut], len(text) - cut


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units (how Telegram counts message length)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def label(key: object) -> str:
    """A human label for a data key: ``"due_date"`` -> ``"Due date"``."""
    text = clean(str(key)).replace("_", " ").strip() or str(key)
    return text[:1].upper() + text[1:]


def _scalar(value: Any) -> str:
    if value is None:
        return "—"
    if value is True:
        return "yes"
    if value is False:
        return "no"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return f"{value:.1f}"
    return str(value)


def value_text(value: Any) -> str:
    """One value as readable text: scalars as words/numbers, containers as compact JSON.

    Not cleaned: callers clip first and :func:`clean` what they keep (a megabyte value is never
    scanned whole to show one line of it)."""
    if isinstance(value, dict | list):
        return json_text(value, indent=None)
    return _scalar(value)


def json_text(value: Any, indent: int | None = 2) -> str:
    """Plain data as JSON text, unicode kept (not cleaned, see :func:`value_text`)."""
    sep = (", ", ": ") if indent is None else (",", ": ")
    return json.dumps(value, ensure_ascii=False, indent=indent, separators=sep)


def to_plain(value: Any) -> Any:
    """``value`` as plain JSON data (dict with str keys, list, str, int, float, bool, None).

    Pydantic models, dataclasses, enums, dates, sets, tuples and bytes are converted; NaN and
    infinities become strings; a container inside itself becomes ``"<cycle>"``; anything
    deeper than 64 levels becomes ``"<too deep>"``; unknown objects become ``str(obj)``.
    """
    return _plain(value, set(), 0)


def _plain(value: Any, seen: set[int], depth: int) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if depth >= _MAX_DEPTH:
        return "<too deep>"
    if isinstance(value, Mapping | list | tuple | set | frozenset):
        if id(value) in seen:
            return "<cycle>"
        seen.add(id(value))
        try:
            if isinstance(value, Mapping):
                return {_key(k): _plain(v, seen, depth + 1) for k, v in value.items()}
            return [_plain(v, seen, depth + 1) for v in value]
        finally:
            seen.discard(id(value))
    return _plain_object(value, seen, depth)


def _plain_object(value: Any, seen: set[int], depth: int) -> Any:
    if isinstance(value, enum.Enum):
        return _plain(value.value, seen, depth + 1)
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(bytes(value))} bytes>"
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return _plain(dump(mode="json"), seen, depth + 1)
        except Exception:  # a broken model still renders as text
            return _safe_str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return _plain(fields, seen, depth + 1)
    return _safe_str(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, enum.Enum):
        return str(key.value)
    if key is None or isinstance(key, bool):
        return json.dumps(key)
    return _safe_str(key)


def _safe_str(value: Any) -> str:
    try:
        return str(value)
    except Exception:  # an object whose __str__ fails still renders
        return f"<{type(value).__name__}>"

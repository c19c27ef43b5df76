"""Text helpers shared by every renderer: cleaning, clipping, labels and value formatting.

Everything a tool returns is untrusted. Before any channel escapes it, :func:`clean` makes
characters that hide or reorder text visible (``⟨U+202E⟩``), so an approver always sees the
arguments they approve.
"""

from __future__ import annotations

import json
import re
import unicodedata
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

__all__ = ["clean", "clip", "joins_previous", "json_text", "label", "scalar_text", "utf16_len", "value_text"]

# C0/C1 controls (not \t \n), bidi embeddings/overrides/isolates, invisible spaces and
# joiners that are never needed (ZWJ/ZWNJ stay: emoji sequences and many scripts need
# them), line/paragraph separators, and lone surrogates.
_HIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u180e\u200b\u2028\u2029\u202a-\u202e"
    "\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb\ud800-\udfff]"
)
_NEWLINES = {"\u2028": "\n", "\u2029": "\n"}


def _visible(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _NEWLINES:
        return _NEWLINES[ch]
    if "\ud800" <= ch <= "\udfff":
        return "\ufffd"
    return f"⟨U+{ord(ch):04X}⟩"


def clean(text: str) -> str:
    """``text`` with CR/CRLF as ``\\n`` and hidden or reordering characters made visible."""
    if text.isprintable():  # no CR and nothing _HIDDEN matches is printable (a test checks every code point)
        return text
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
    if type(key) is str:
        found = _LABELS.get(key)
        if found is not None:
            return found
    text = clean(str(key)).replace("_", " ").strip() or str(key)
    text = text[:1].upper() + text[1:]
    if type(key) is str and len(key) <= 100:  # a result's keys: the same few, result after result
        if len(_LABELS) >= 1024:
            _LABELS.clear()
        _LABELS[key] = text
    return text


#: Data keys -> their labels (:func:`label` is a function of the key alone).
_LABELS: dict[str, str] = {}


def scalar_text(value: Any) -> str:
    """A scalar as a word or number: ``None`` -> ``—``, ``True`` -> ``yes``, ``2.0`` -> ``2.0``."""
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
    return scalar_text(value)


#: Values a flat object holds (JSON text of one is the same at every indent).
_SCALARS = frozenset({str, int, float, bool, type(None)})
#: A flat object's members, one an indented line: what ``indent=2`` writes between them, by the C encoder (made
#: once: ``JSONEncoder.encode`` makes one on every call; no circular check, a flat object holds no container).
_FLAT: Any = (
    c_make_encoder(None, json.JSONEncoder().default, encode_basestring, None, ": ", ",\n  ", False, False, True)
    if c_make_encoder is not None
    else json.JSONEncoder(ensure_ascii=False, separators=(",\n  ", ": ")).iterencode  # pragma: no cover
)


def json_text(value: Any, indent: int | None = 2) -> str:
    """Plain data as JSON text, unicode kept (not cleaned, see :func:`value_text`)."""
    if indent == 2 and type(value) is dict and value and all(type(v) in _SCALARS for v in value.values()):
        # a flat object (most tools' arguments): the same text as below, by the C encoder (``indent`` takes the
        # pure-Python one), its members put on lines of their own
        return "{\n  " + "".join(_FLAT(value, 0))[1:-1] + "\n}"
    sep = (", ", ": ") if indent is None else (",", ": ")
    return json.dumps(value, ensure_ascii=False, indent=indent, separators=sep)

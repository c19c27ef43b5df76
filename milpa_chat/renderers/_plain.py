"""Any Python value as plain JSON data, redacted on the way, within a size budget if asked.

Renderers show a bounded part of a result, so they convert only what they show: a budget
(in values visited) cuts longer containers with an ``"… N more"`` marker. The complete,
redacted result is converted without a budget, and only when its document is needed.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import json
import math
from collections.abc import Callable, Mapping
from itertools import islice
from typing import Any, Final

from milpa_chat.runtime.redaction import REDACTED, Redaction

__all__ = ["REDACTED", "json_document", "plain_key", "to_plain", "to_plain_within"]

_MAX_DEPTH: Final = 64
_PRETTY_UP_TO: Final = 64 * 1024
_UNLIMITED: Final = 1 << 62


def to_plain(value: Any, hide: Callable[[str], bool] | None = None, budget: int | None = None) -> Any:
    """``value`` as plain JSON data (dict with str keys, list, str, int, float, bool, None).

    Pydantic models, dataclasses, enums, dates, sets, tuples and bytes are converted; NaN and
    infinities become strings; a container inside itself becomes ``"<cycle>"``; anything
    deeper than 64 levels becomes ``"<too deep>"``; unknown objects become ``str(obj)``.
    With ``hide``, the value of every key it names is replaced by ``***REDACTED***`` and
    ``_ctx`` keys are dropped; when ``hide`` is a :class:`~milpa_chat.runtime.redaction.Redaction`
    every string is masked as well (the audit log's rule, applied in the same walk). With
    ``budget``, at most about that many values are converted (see :func:`to_plain_within`).
    """
    return Walker(hide, budget).plain(value, 0)


def to_plain_within(value: Any, hide: Callable[[str], bool] | None, budget: int) -> tuple[Any, bool]:
    """:func:`to_plain` within ``budget`` values, and whether anything was left out."""
    walker = Walker(hide, budget)
    return walker.plain(value, 0), walker.cut


def json_document(value: Any) -> bytes:
    """Plain data as a JSON file: indented when small, compact when big (indenting a megabyte
    takes the pure-Python encoder ten times longer)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if len(text) <= _PRETTY_UP_TO:
        text = json.dumps(value, ensure_ascii=False, indent=2)
    return text.encode("utf-8", "replace")


#: Whether a key is hidden, per :class:`Redaction` rule (its ``extra`` names): a pure function of the key and
#: the names, so every walk under the same rule shares what it found (a card and a result convert the same few
#: keys again each time); at most ``_KNOWN_KEPT`` keys a rule, for at most ``_KNOWN_KEPT`` rules.
_KNOWN: dict[tuple[str, ...], dict[str, bool]] = {}
_KNOWN_KEPT: Final = 4096


def _known(hide: Callable[[str], bool] | None) -> dict[str, bool]:
    """The keys a walk with ``hide`` knows already: the shared ones of a :class:`Redaction` (a subclass may
    decide otherwise, and any other callable may change its mind: a walk of its own for them)."""
    if type(hide) is not Redaction:
        return {}
    try:
        known = _KNOWN.get(hide.extra)
        if known is None or len(known) >= _KNOWN_KEPT:
            if len(_KNOWN) >= _KNOWN_KEPT:
                _KNOWN.clear()
            known = _KNOWN[hide.extra] = {}
    except TypeError:  # names that are not strings (unhashable): nothing shared
        return {}
    return known


class Walker:
    """One walk over the data. Exact types are tested first and leaves inline: most of a big
    result is plain dicts, lists and strings, and ``isinstance`` against ABCs is slow."""

    __slots__ = ("cut", "hide", "known", "left", "mask", "seen")

    def __init__(self, hide: Callable[[str], bool] | None, budget: int | None = None) -> None:
        self.hide = hide
        self.mask: Callable[[str], str] | None = hide.mask if isinstance(hide, Redaction) else None
        self.left = _UNLIMITED if budget is None else budget
        self.cut = False
        self.seen: set[int] = set()
        self.known: dict[str, bool] = _known(hide)  # key -> hidden

    def plain(self, value: Any, depth: int) -> Any:
        kind = type(value)
        if kind is str:
            return value if self.mask is None else self.mask(value)
        if kind is int or kind is bool or value is None:
            return value
        if kind is float:
            return value if math.isfinite(value) else str(value)
        if depth >= _MAX_DEPTH:
            return "<too deep>"
        if kind is dict:
            return self._mapping(value, depth)
        if kind is list or kind is tuple:
            return self._sequence(value, depth)
        return self._other(value, depth)

    def _other(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):  # subclasses: StrEnum, ...
            return value if self.mask is None else self.mask(value)
        if isinstance(value, bool | int):  # subclasses: IntEnum, ...
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else str(value)
        if isinstance(value, Mapping):
            return self._mapping(value, depth)
        if isinstance(value, list | tuple | set | frozenset):
            return self._sequence(value, depth)
        return _plain_object(value, self, depth)

    def _room(self, size: int) -> int:
        """How many of ``size`` elements fit the budget (spending them)."""
        if self.left >= size:
            self.left -= max(size, 1)
            return size
        room = max(self.left, 0)
        self.left -= max(size, 1)
        self.cut = True
        return room

    def _secret(self, key: str) -> bool:
        known = self.known.get(key)
        if known is None:
            known = self.known[key] = key == "_ctx" or (self.hide is not None and self.hide(key))
        return known

    def _mapping(self, value: Mapping[Any, Any], depth: int) -> Any:
        if id(value) in self.seen:
            return "<cycle>"
        self.seen.add(id(value))
        out: dict[str, Any] = {}
        plain, depth, size = self.plain, depth + 1, len(value)
        room = self._room(size)
        hiding, mask = self.hide is not None, self.mask
        for k, v in value.items() if room == size else islice(value.items(), room):
            key = k if type(k) is str else _key(k)
            if hiding and self._secret(key):
                if key != "_ctx":
                    out[key] = REDACTED
                continue
            kind = type(v)
            if kind is str:
                out[key] = v if mask is None or len(v) < 5 else mask(v)
            else:
                out[key] = v if kind is int or kind is bool or v is None else plain(v, depth)
        if room < size:
            out["…"] = f"{size - room:,} more"
        self.seen.discard(id(value))
        return out

    def _sequence(self, value: Any, depth: int) -> Any:
        if id(value) in self.seen:
            return "<cycle>"
        self.seen.add(id(value))
        plain, depth, size = self.plain, depth + 1, len(value)
        room = self._room(size)
        items = value if room == size else islice(value, room)
        if self.mask is None:
            out = [v if type(v) is str or type(v) is int or v is None else plain(v, depth) for v in items]
        else:
            out = [v if type(v) is int or v is None else plain(v, depth) for v in items]
        if room < size:
            out.append(f"… {size - room:,} more")
        self.seen.discard(id(value))
        return out


def _plain_object(value: Any, walker: Walker, depth: int) -> Any:
    if isinstance(value, enum.Enum):
        return walker.plain(value.value, depth + 1)
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(bytes(value))} bytes>"
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return walker.plain(dump(mode="json"), depth + 1)
        except Exception:  # a broken model still renders as text
            return _safe_str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return walker.plain(fields, depth + 1)
    return _safe_str(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, enum.Enum):
        return str(key.value)
    if key is None or isinstance(key, bool):
        return json.dumps(key)
    return _safe_str(key)


def plain_key(key: Any) -> str:
    """A mapping key as the string JSON would use."""
    return key if type(key) is str else _key(key)


def _safe_str(value: Any) -> str:
    try:
        return str(value)
    except Exception:  # an object whose __str__ fails still renders
        return f"<{type(value).__name__}>"

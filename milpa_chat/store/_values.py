"""What a record's value must be and how it is copied and encoded: the checks every store runs before it writes
(a JSON object that round-trips, a due time, a time to live, the records an ``update_with`` creates), the copy a
compare-and-set hands back, and the compact JSON text a record is stored as (:class:`Encoded`, which keeps the
text of each top-level value so a record changed in a few fields is encoded again only there)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from types import EllipsisType
from typing import Any

from milpa_chat.errors import StoreError

__all__ = [
    "KEEP",
    "Due",
    "Encoded",
    "check_due",
    "check_inserts",
    "check_text",
    "check_value",
    "copy_value",
    "encode_parts",
    "expiry",
]

#: ``update(..., due=KEEP)`` leaves the record's due time as it is (the default).
KEEP: EllipsisType = ...
Due = float | None | EllipsisType


def check_inserts(
    collection: str, key: str, inserts: Sequence[tuple[str, str, Mapping[str, Any]]]
) -> Sequence[tuple[str, str, Mapping[str, Any]]]:
    """The ``inserts`` of :meth:`Store.update_with`, once checked: each a ``(collection, key, value)``, no key
    twice and none the updated record's; a :class:`~milpa_chat.errors.StoreError` naming what is wrong
    otherwise, before anything is written."""
    seen = {(collection, key)}
    for item in inserts:
        if not (isinstance(item, tuple) and len(item) == 3 and isinstance(item[0], str) and isinstance(item[1], str)):
            raise StoreError(
                f"update_with({collection!r}, {key!r}, inserts=...) takes (collection, key, value) tuples, got {item!r}"
            )
        if (item[0], item[1]) in seen:
            raise StoreError(
                f"update_with({collection!r}, {key!r}, inserts=...) names {item[0]!r}/{item[1]!r} twice (or it is "
                "the record being updated): give every record once"
            )
        seen.add((item[0], item[1]))
    return inserts


def check_value(collection: str, key: str, value: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a record value: a JSON object that round-trips. Returns a plain-dict copy."""
    result: dict[str, Any] = json.loads(check_text(collection, key, value))
    return result


def copy_value(value: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of a record value (a JSON tree): objects and arrays are copied (a tuple becomes a list, as
    through JSON), strings, numbers, booleans and None shared. About four times faster than a JSON round trip:
    a scalar is copied in place, without a call (most of a record's leaves are scalars)."""
    return _copied_dict(value)


def _copied_dict(value: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in value.items():
        kind = type(v)
        if kind is dict:
            out[k] = _copied_dict(v)
        elif kind is list or kind is tuple:
            out[k] = _copied_list(v)
        else:
            out[k] = v
    return out


def _copied_list(value: list[Any] | tuple[Any, ...]) -> list[Any]:
    out: list[Any] = []
    for v in value:
        kind = type(v)
        if kind is dict:
            out.append(_copied_dict(v))
        elif kind is list or kind is tuple:
            out.append(_copied_list(v))
        else:
            out.append(v)
    return out


def _not_json(o: Any) -> Any:
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def _compact(value: Mapping[str, Any]) -> str:
    """``json.dumps(value, allow_nan=False, separators=(",", ":"))``, through the C encoder directly (a fresh
    one each time: its table of containers being encoded is left behind by an error)."""
    if c_make_encoder is None:  # pragma: no cover - CPython always has it
        return json.dumps(value, allow_nan=False, separators=(",", ":"))
    encode = c_make_encoder({}, _not_json, encode_basestring_ascii, None, ":", ",", False, False, False)
    return "".join(encode(value, 0))


def check_text(collection: str, key: str, value: Mapping[str, Any]) -> str:
    """Validate a record value like :func:`check_value` and return it as compact JSON text (an
    :class:`Encoded` value's own text: it was checked when it was encoded)."""
    if (collection.__class__ is not str and not isinstance(collection, str)) or not collection:
        raise StoreError(f"collection must be a non-empty string, got {collection!r}")
    if (key.__class__ is not str and not isinstance(key, str)) or not key:
        raise StoreError(f"key must be a non-empty string, got {key!r} (collection {collection!r})")
    if value.__class__ is Encoded and value.text is not None:
        return value.text
    if value.__class__ is not dict and not isinstance(value, Mapping):
        raise StoreError(f"value of {collection}/{key} must be a JSON object (a dict), got {type(value).__name__}")
    try:
        return _compact(value)
    except (TypeError, ValueError) as exc:
        raise _not_serialisable(collection, key, exc) from exc


def _not_serialisable(collection: str, key: str, exc: Exception) -> StoreError:
    return StoreError(
        f"value of {collection}/{key} is not JSON-serialisable ({exc}); "
        "store only dicts, lists, strings, numbers, booleans and None"
    )


class Encoded(dict[str, Any]):
    """A record value with its compact JSON text already made (:func:`encode_parts`): a write stores ``text``
    without encoding the value again. Build it right before the write and change nothing nested in it (a
    change of a top-level field drops the text: the value is then encoded as any other)."""

    __slots__ = ("text",)

    def __init__(self, value: Mapping[str, Any], text: str) -> None:
        dict.__init__(self, value)
        self.text: str | None = text

    def _changed(self) -> None:
        self.text = None

    def __setitem__(self, key: str, value: Any) -> None:
        self._changed()
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: str) -> None:
        self._changed()
        dict.__delitem__(self, key)

    def __ior__(self, other: Any) -> Encoded:  # type: ignore[override,misc]
        self._changed()
        dict.update(self, other)
        return self

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._changed()
        dict.update(self, *args, **kwargs)

    def setdefault(self, key: str, default: Any = None) -> Any:
        self._changed()
        return dict.setdefault(self, key, default)

    def pop(self, key: str, *default: Any) -> Any:
        self._changed()
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[str, Any]:
        self._changed()
        return dict.popitem(self)

    def clear(self) -> None:
        self._changed()
        dict.clear(self)


_MISSING: Any = object()


def encode_parts(
    collection: str,
    key: str,
    value: Mapping[str, Any],
    base: Mapping[str, Any] | None = None,
    parts: Mapping[str, str] | None = None,
) -> tuple[str, dict[str, str]]:
    """``value`` as :func:`check_text` encodes it, and its parts: per top-level key, ``"key":<its value's JSON>``.

    ``parts`` are those of ``base`` (an earlier value this one was made from): a top-level value that is
    ``base``'s own object (the same object, never changed in place) reuses its part, so a write that changes a
    few fields of a record encodes only those. The text is byte for byte what :func:`check_text` returns;
    anything :func:`check_text` refuses raises the same :class:`~milpa_chat.errors.StoreError`."""
    if value.__class__ is not dict and not isinstance(value, Mapping):
        return check_text(collection, key, value), {}
    if base is None or parts is None:
        base, parts = _NOTHING, _NOTHING
    encode = c_make_encoder({}, _not_json, encode_basestring_ascii, None, ":", ",", False, False, False)
    out: dict[str, str] = {}
    try:
        for k, v in value.items():
            if k in parts and k in base and base[k] is v:
                out[k] = parts[k]
                continue
            if k.__class__ is not str:  # a key JSON turns into a string: the encoder's way, in one pass
                return check_text(collection, key, value), {}
            prefix = _KEYS[k] if k in _KEYS else _key(k)
            kind = v.__class__  # a scalar as the C encoder writes it, without calling it
            if kind is str:
                out[k] = prefix + encode_basestring_ascii(v)
            elif v is None:
                out[k] = prefix + "null"
            elif kind is bool:
                out[k] = prefix + ("true" if v else "false")
            elif kind is int:
                out[k] = prefix + int.__repr__(v)
            elif kind is float and v - v == 0.0:  # finite (NaN and infinities go to the encoder, which refuses them)
                out[k] = prefix + float.__repr__(v)
            else:
                out[k] = prefix + "".join(encode(v, 0))
    except (TypeError, ValueError) as exc:
        raise _not_serialisable(collection, key, exc) from exc
    return "{" + ",".join(out.values()) + "}", out


#: ``"key":`` of the top-level keys met (records have a few dozen distinct ones; at most 4,096 kept).
_KEYS: dict[str, str] = {}


def _key(k: str) -> str:
    prefix = encode_basestring_ascii(k) + ":"
    if len(_KEYS) < 4096:
        _KEYS[k] = prefix
    return prefix


_NOTHING: Mapping[str, Any] = {}


def check_due(due: Due) -> None:
    if due is None or due is ...:
        return
    if isinstance(due, bool) or not isinstance(due, int | float) or math.isnan(due):
        raise StoreError(f"due must be a UNIX time in seconds, None or KEEP, got {due!r}")


def expiry(now: float, ttl: float | None) -> float | None:
    if ttl is None:
        return None
    if not isinstance(ttl, int | float) or math.isnan(ttl) or ttl <= 0:
        raise StoreError(f"ttl must be a positive number of seconds or None, got {ttl!r}")
    return now + float(ttl)

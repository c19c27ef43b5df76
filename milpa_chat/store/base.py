"""The store protocol: durable records and the atomic operations the runtime and chat need.

The store knows nothing of tools. It keeps JSON records in named collections, append-only
streams, and sliding-window rate counters. Every state change that must happen once is a
single atomic operation of the backend:

* :meth:`Store.insert` — create only if absent (dedup claims, new requests);
* :meth:`Store.update` — compare-and-set on the record's ``version`` (decide an approval);
* :meth:`Store.take` — delete and return, to exactly one caller (consume a token);
* :meth:`Store.update_with` — compare-and-set one record and create others, all or nothing, in one
  transaction (move a log's head and write the entries it now names).

Every write is durable once it returns (it survives a power cut), except an ``insert``, ``put`` or
``update`` made with ``durable=False``: such a write survives any crash of the process but may be
lost, together with the other non-durable writes just before it, on a power cut or an OS crash —
never a write that was made durably after it. It is for records whose loss only repeats harmless
work (delivery de-duplication keys, page views, the marks of what a card already shows), and lets a
backend skip the wait for the disk.

A record may carry a ``due`` time (set with the same write that changes it); :meth:`Store.due`
reads the records whose ``due`` has come, oldest first, through an index, so a sweeper over
100,000 pending records reads only the few that need attention.

All methods are coroutines. Times are UNIX seconds from the store's ``clock``; a record
with ``expires_at`` in the past no longer exists for any operation (``get`` returns
``None``, ``insert`` may reuse its key, ``purge_expired`` deletes it).

Values must be JSON objects (``dict`` with ``str`` keys and JSON values); anything else
raises :class:`~milpa_chat.errors.StoreError` naming the collection and key, before any
write happens.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from types import EllipsisType
from typing import Any, Protocol, runtime_checkable

from milpa_chat.errors import StoreError

__all__ = [
    "KEEP",
    "Clock",
    "Due",
    "Encoded",
    "RateDecision",
    "Record",
    "Store",
    "StreamEntry",
    "check_due",
    "check_inserts",
    "check_text",
    "check_value",
    "copy_value",
    "encode_parts",
]

Clock = Callable[[], float]
#: ``update(..., due=KEEP)`` leaves the record's due time as it is (the default).
KEEP: EllipsisType = ...
Due = float | None | EllipsisType


class Record:
    """One stored record. ``version`` starts at 1 and grows by one on every write.

    Immutable like a frozen dataclass. A backend may build it from the stored JSON text
    (:meth:`from_text`): ``value`` is then decoded on first use, so a caller that only needs the version
    a write returned (a compare-and-set) decodes nothing."""

    __slots__ = ("_text", "_value", "collection", "created_at", "due", "expires_at", "key", "updated_at", "version")
    _FIELDS = ("collection", "key", "value", "version", "created_at", "updated_at", "expires_at", "due")

    collection: str
    key: str
    version: int
    created_at: float
    updated_at: float
    expires_at: float | None
    due: float | None
    _value: dict[str, Any] | None
    _text: str | None

    def __init__(
        self,
        collection: str,
        key: str,
        value: dict[str, Any],
        version: int,
        created_at: float,
        updated_at: float,
        expires_at: float | None = None,
        due: float | None = None,
    ) -> None:
        self._set(collection, key, value, None, version, created_at, updated_at, expires_at, due)

    @classmethod
    def from_text(
        cls,
        collection: str,
        key: str,
        text: str,
        version: int,
        created_at: float,
        updated_at: float,
        expires_at: float | None = None,
        due: float | None = None,
    ) -> Record:
        """A record whose ``value`` is the JSON object ``text``, decoded when first read."""
        record = cls.__new__(cls)
        record._set(collection, key, None, text, version, created_at, updated_at, expires_at, due)
        return record

    def _set(
        self,
        collection: str,
        key: str,
        value: dict[str, Any] | None,
        text: str | None,
        version: int,
        created_at: float,
        updated_at: float,
        expires_at: float | None,
        due: float | None,
    ) -> None:
        set_ = object.__setattr__  # (one call per field, no loop: a record is built on every write and read)
        set_(self, "collection", collection)
        set_(self, "key", key)
        set_(self, "_value", value)
        set_(self, "_text", text)
        set_(self, "version", version)
        set_(self, "created_at", created_at)
        set_(self, "updated_at", updated_at)
        set_(self, "expires_at", expires_at)
        set_(self, "due", due)

    @property
    def value(self) -> dict[str, Any]:
        value: dict[str, Any] | None = self._value
        if value is None:
            value = json.loads(self._text or "{}")
            object.__setattr__(self, "_value", value)
            object.__setattr__(self, "_text", None)
        return value

    def __reduce__(self) -> tuple[type[Record], tuple[Any, ...]]:  # pickle and copy, as the dataclass did
        return Record, tuple(getattr(self, f) for f in self._FIELDS)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Record is immutable: cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Record is immutable: cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self._FIELDS)

    __hash__ = None  # type: ignore[assignment]  # its value is a dict

    def __repr__(self) -> str:
        return f"Record({', '.join(f'{f}={getattr(self, f)!r}' for f in self._FIELDS)})"


@dataclass(frozen=True, slots=True)
class StreamEntry:
    """One entry of an append-only stream; ``seq`` grows strictly within the stream."""

    stream: str
    seq: int
    value: dict[str, Any]
    at: float


@dataclass(frozen=True, slots=True)
class RateDecision:
    """Outcome of :meth:`Store.hit`.

    ``remaining`` is the budget left in the window after this hit (0 when denied);
    ``retry_after`` is how many seconds until a hit of the same cost would fit (0.0 when allowed).
    """

    allowed: bool
    remaining: int
    retry_after: float


@runtime_checkable
class Store(Protocol):
    """Durable state behind one small protocol. See the module docstring for semantics."""

    clock: Clock

    async def get(self, collection: str, key: str) -> Record | None:
        """The live record, or ``None`` when absent or expired."""
        ...

    async def insert(
        self,
        collection: str,
        key: str,
        value: Mapping[str, Any],
        *,
        ttl: float | None = None,
        due: float | None = None,
        durable: bool = True,
    ) -> Record | None:
        """Create the record only if no live record has this key. ``None`` when one exists.

        ``durable=False``: the record may be lost on a power cut (see the module docstring)."""
        ...

    async def put(
        self,
        collection: str,
        key: str,
        value: Mapping[str, Any],
        *,
        ttl: float | None = None,
        due: float | None = None,
        durable: bool = True,
    ) -> Record:
        """Create or replace (the version grows by one). ``ttl=None`` means never expires.

        ``durable=False``: the write may be lost on a power cut (see the module docstring)."""
        ...

    async def update(
        self,
        collection: str,
        key: str,
        value: Mapping[str, Any],
        *,
        expected_version: int,
        ttl: float | None = None,
        due: Due = KEEP,
        durable: bool = True,
    ) -> Record | None:
        """Replace the value only if the live record is at ``expected_version``.

        Returns the new record, or ``None`` when the record is gone or another writer won.
        ``ttl=None`` keeps the current expiry; ``due=KEEP`` keeps the due time (``None`` clears it).
        ``durable=False``: the write may be lost on a power cut (see the module docstring); it is a
        compare-and-set all the same.
        """
        ...

    async def update_with(
        self,
        collection: str,
        key: str,
        value: Mapping[str, Any],
        *,
        expected_version: int,
        inserts: Sequence[tuple[str, str, Mapping[str, Any]]],
        durable: bool = True,
    ) -> Record | None:
        """Compare-and-set ``key`` as :meth:`update` does (keeping its expiry and due time) and create every
        record of ``inserts`` (``(collection, key, value)``, none expiring), in one transaction: all of it, or
        nothing when the record is gone or at another version, or when a key of ``inserts`` holds a record (live,
        or expired and not yet purged: the records made here are new keys, such as a log's entries). Returns the
        updated record, or ``None`` when nothing was written. One write, one wait for the disk when ``durable``."""
        ...

    async def take(self, collection: str, key: str, *, expected_version: int | None = None) -> Record | None:
        """Delete the live record and return it; at most one concurrent caller gets it."""
        ...

    async def delete(self, collection: str, key: str) -> bool:
        """Delete the record; ``True`` when something live was deleted."""
        ...

    async def scan(
        self,
        collection: str,
        *,
        where: Mapping[str, Any] | None = None,
        prefix: str = "",
        limit: int | None = None,
    ) -> list[Record]:
        """Live records ordered by key; ``where`` keeps those whose top-level fields equal the values."""
        ...

    async def due(self, collection: str, *, before: float, limit: int = 100) -> list[Record]:
        """Live records of ``collection`` whose ``due`` is at or before ``before``, earliest first."""
        ...

    async def append(self, stream: str, value: Mapping[str, Any]) -> StreamEntry:
        """Append to a stream (conversation history, audit trail)."""
        ...

    async def read(self, stream: str, *, after: int = 0, limit: int | None = None) -> list[StreamEntry]:
        """Entries with ``seq > after`` in order, at most ``limit`` of them."""
        ...

    async def trim(self, stream: str, *, keep_last: int) -> int:
        """Delete all but the newest ``keep_last`` entries; returns how many were deleted."""
        ...

    async def hit(self, key: str, *, cost: int, limit: int, window: float) -> RateDecision:
        """Sliding-window rate counter: record ``cost`` under ``key`` if the last ``window``
        seconds hold at most ``limit - cost``; otherwise record nothing and deny."""
        ...

    async def purge_expired(self) -> int:
        """Delete expired records (and rate-window entries older than their window)."""
        ...

    async def close(self) -> None:
        """Release connections. The store must not be used afterwards."""
        ...


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

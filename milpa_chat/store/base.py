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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from milpa_chat.store._values import (
    KEEP,
    Due,
    Encoded,
    check_due,
    check_inserts,
    check_text,
    check_value,
    copy_value,
    encode_parts,
    expiry,
)

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
    "expiry",
]

Clock = Callable[[], float]


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

"""Pieces shared by the SQL backends: the bridge from coroutines to blocking database work,
the ``milpa_meta`` checks, row decoding, scan filtering and the sliding-window arithmetic."""

from __future__ import annotations

import asyncio
import json
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar, TypeVarTuple, Unpack

from milpa_chat.errors import StoreError, StoreSchemaError
from milpa_chat.store._hop import Workers
from milpa_chat.store.base import Clock, RateDecision, Record, check_text

__all__ = [
    "APPLICATION",
    "SCHEMA_VERSION",
    "RecordRow",
    "ThreadedStore",
    "check_meta",
    "decode",
    "encode",
    "is_live",
    "matches",
    "prefilters",
    "prefix_upper",
    "rate_decision",
    "to_record",
]

APPLICATION = "milpa-chat"
#: 1: records, streams, hits. 2: records carry ``due`` with an index (opened v1 stores are upgraded).
SCHEMA_VERSION = 2

T = TypeVar("T")
Ts = TypeVarTuple("Ts")

#: ``(key, value as JSON text, version, created_at, updated_at, expires_at, due)``
RecordRow = tuple[str, str, int, float, float, float | None, float | None]

_MISSING = object()


class ThreadedStore(ABC):
    """Runs a backend's blocking work on a dedicated pool of threads, off the event loop."""

    clock: Clock

    def __init__(self, *, clock: Clock, workers: int, name: str) -> None:
        self.clock = clock
        self._executor = Workers(workers, name)
        self._closed = False

    @abstractmethod
    def _describe(self) -> str: ...

    def _translate(self, exc: Exception) -> StoreError | None:
        """The :class:`StoreError` to raise for a database error, or ``None`` to re-raise it."""
        return None

    def _guarded(self, fn: Callable[[Unpack[Ts]], T], *args: *Ts) -> T:
        try:
            return fn(*args)
        except Exception as exc:
            mapped = self._translate(exc)
            if mapped is None:
                raise
            raise mapped from exc

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"{self._describe()} is closed; open a new store to keep working")

    async def _run(self, fn: Callable[[Unpack[Ts]], T], *args: *Ts) -> T:
        self._check_open()
        try:
            future = self._executor.run(self._guarded, fn, *args)
        except RuntimeError as exc:  # the pool was shut down by a concurrent close()
            raise StoreError(f"{self._describe()} is closed; open a new store to keep working") from exc
        return await future

    async def _shutdown(self, release: Callable[[], None]) -> None:
        """Mark closed, let running work finish, then ``release`` connections (idempotent)."""
        if self._closed:
            return
        self._closed = True

        def stop() -> None:
            self._executor.close(wait=True)
            release()

        await asyncio.to_thread(stop)


def encode(collection: str, key: str, value: Mapping[str, Any]) -> str:
    """Validate ``value`` with :func:`check_text` and return its compact JSON text."""
    return check_text(collection, key, value)


def decode(text: str) -> dict[str, Any]:
    """A stored JSON object back as a fresh dict."""
    value: dict[str, Any] = json.loads(text)
    return value


def is_live(expires_at: float | None, now: float) -> bool:
    return expires_at is None or expires_at > now


def to_record(collection: str, row: Sequence[Any]) -> Record:
    key, value, version, created_at, updated_at, expires_at, due = row
    return Record.from_text(
        collection,
        key,
        value,
        int(version),
        float(created_at),
        float(updated_at),
        None if expires_at is None else float(expires_at),
        None if due is None else float(due),
    )


def check_meta(meta: Mapping[str, str], where: str) -> int:
    """The schema version of a milpa-chat store this code understands; raise :class:`StoreSchemaError` otherwise."""
    app = meta.get("application")
    if app != APPLICATION:
        raise StoreSchemaError(
            f"{where} has a milpa_meta table naming application {app!r}, not {APPLICATION!r}; it belongs to "
            "another program and milpa-chat will not touch it. Point the store at a separate database."
        )
    raw = meta.get("schema_version", "")
    if not raw.isdigit() or int(raw) < 1:
        raise StoreSchemaError(
            f"{where} has a milpa_meta table with an unreadable schema_version {raw!r}; "
            "milpa-chat will not touch it. Restore it from a backup or point the store elsewhere."
        )
    if int(raw) > SCHEMA_VERSION:
        raise StoreSchemaError(
            f"{where} holds a milpa-chat store with schema version {raw}, written by a newer milpa-chat; "
            f"this version understands schema {SCHEMA_VERSION}. Upgrade milpa-chat to open it."
        )
    return int(raw)


def prefix_upper(prefix: str) -> str | None:
    """The smallest string above every string starting with ``prefix`` (code-point order), if any."""
    chars = list(prefix)
    while chars:
        code = ord(chars.pop())
        if code < 0x10FFFF:
            code += 1
            if 0xD800 <= code <= 0xDFFF:  # surrogates cannot be stored; skip past them
                code = 0xE000
            return "".join(chars) + chr(code)
    return None


def matches(value: Mapping[str, Any], where: Mapping[str, Any] | None) -> bool:
    """``where`` semantics of :meth:`Store.scan`: every top-level field equals the given value."""
    return not where or all(value.get(k, _MISSING) == v for k, v in where.items())


def prefilters(where: Mapping[str, Any] | None) -> list[str]:
    """Substrings every stored JSON text (as written by :func:`encode`) matching ``where`` contains:
    ``"field":"text"`` or ``"field":null`` for string and null values. A cheap superset filter for
    the database; :func:`matches` still decides every row."""
    if not where:
        return []
    return [
        json.dumps(k) + ":" + json.dumps(v)
        for k, v in where.items()
        if isinstance(k, str) and (v is None or isinstance(v, str))
    ]


def rate_decision(
    hits: Iterable[tuple[float, int]], *, cost: int, limit: int, window: float, now: float
) -> RateDecision:
    """Decide a hit given the ``(at, cost)`` entries inside the window, oldest first."""
    entries = list(hits)
    used = sum(c for _, c in entries)
    if used + cost <= limit:
        return RateDecision(True, limit - used - cost, 0.0)
    if cost > limit:
        return RateDecision(False, 0, math.inf)
    need = used + cost - limit
    freed = 0
    for at, c in entries:
        freed += c
        if freed >= need:
            return RateDecision(False, 0, max(0.0, at + window - now))
    return RateDecision(False, 0, window)

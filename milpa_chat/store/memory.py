"""``MemoryStore``: the in-process backend for tests and notebooks. Nothing survives a restart.

Values are kept as their JSON text: a write encodes once, every read decodes a fresh copy (the
caller may change what it gets without touching the store)."""

from __future__ import annotations

import bisect
import math
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from milpa_chat.store._sql import prefilters
from milpa_chat.store.base import (
    KEEP,
    Clock,
    Due,
    RateDecision,
    Record,
    StreamEntry,
    check_due,
    check_inserts,
    check_text,
    check_value,
    copy_value,
    expiry,
)

__all__ = ["MemoryStore"]


@dataclass(slots=True)
class _Row:
    """One stored record, its value as JSON text."""

    collection: str
    key: str
    text: str
    version: int
    created_at: float
    updated_at: float
    expires_at: float | None
    due: float | None

    def record(self) -> Record:
        return Record.from_text(
            self.collection,
            self.key,
            self.text,
            self.version,
            self.created_at,
            self.updated_at,
            self.expires_at,
            self.due,
        )


class MemoryStore:
    """Thread-safe in-memory store. Atomic operations hold one lock for their whole duration.

    ``durable=False`` is accepted and changes nothing: no write here survives the process."""

    def __init__(self, *, clock: Clock = time.time) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._records: dict[str, dict[str, _Row]] = {}
        self._streams: dict[str, list[StreamEntry]] = {}
        self._seq: dict[str, int] = {}
        self._hits: dict[str, deque[tuple[float, int]]] = {}
        self._due: dict[str, list[tuple[float, str]]] = {}  # per collection, sorted: the due index
        self._closed = False

    # ----------------------------------------------------------- helpers
    def _live(self, collection: str, key: str, now: float) -> _Row | None:
        rec = self._records.get(collection, {}).get(key)
        if rec is None:
            return None
        if rec.expires_at is not None and rec.expires_at <= now:
            self._drop(rec)
            return None
        return rec

    def _drop(self, rec: _Row) -> None:
        del self._records[rec.collection][rec.key]
        self._index(rec, None)

    def _store(self, rec: _Row, old: _Row | None) -> None:
        self._records.setdefault(rec.collection, {})[rec.key] = rec
        if old is not None and old.due != rec.due:
            self._index(old, None)
        if rec.due is not None and (old is None or old.due != rec.due):
            self._index(rec, rec.due)

    def _index(self, rec: _Row, due: float | None) -> None:
        index = self._due.setdefault(rec.collection, [])
        if due is None:
            if rec.due is not None:
                i = bisect.bisect_left(index, (rec.due, rec.key))
                if i < len(index) and index[i] == (rec.due, rec.key):
                    del index[i]
            return
        bisect.insort(index, (due, rec.key))

    def _check_open(self) -> None:
        if self._closed:
            from milpa_chat.errors import StoreError

            raise StoreError("MemoryStore is closed")

    # ----------------------------------------------------------- records
    async def get(self, collection: str, key: str) -> Record | None:
        with self._lock:
            self._check_open()
            rec = self._live(collection, key, self.clock())
            return None if rec is None else rec.record()

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
        text = check_text(collection, key, value)
        if ttl is not None:
            expiry(0.0, ttl)  # refuse a bad ttl whatever the record's state
        if due is not None:
            check_due(due)
        with self._lock:
            self._check_open()
            now = self.clock()
            if self._live(collection, key, now) is not None:
                return None
            old = self._records.get(collection, {}).get(key)
            rec = _Row(collection, key, text, 1, now, now, expiry(now, ttl), due)
            self._store(rec, old)
            return rec.record()

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
        text = check_text(collection, key, value)
        if ttl is not None:
            expiry(0.0, ttl)  # refuse a bad ttl whatever the record's state
        if due is not None:
            check_due(due)
        with self._lock:
            self._check_open()
            now = self.clock()
            old = self._live(collection, key, now)
            rec = _Row(
                collection,
                key,
                text,
                (old.version + 1) if old else 1,
                old.created_at if old else now,
                now,
                expiry(now, ttl),
                due,
            )
            self._store(rec, self._records.get(collection, {}).get(key))
            return rec.record()

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
        text = check_text(collection, key, value)
        if ttl is not None:
            expiry(0.0, ttl)  # refuse a bad ttl whatever the record's state
        if due is not None and due is not KEEP:
            check_due(due)
        with self._lock:
            self._check_open()
            now = self.clock()
            old = self._live(collection, key, now)
            if old is None or old.version != expected_version:
                return None
            rec = _Row(
                collection,
                key,
                text,
                old.version + 1,
                old.created_at,
                now,
                old.expires_at if ttl is None else expiry(now, ttl),
                old.due if due is ... else due,
            )
            self._store(rec, old)
            return rec.record()

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
        text = check_text(collection, key, value)
        made = [(c, k, check_text(c, k, v)) for c, k, v in check_inserts(collection, key, inserts)]
        with self._lock:
            self._check_open()
            now = self.clock()
            old = self._live(collection, key, now)
            if old is None or old.version != expected_version:
                return None
            if any(k in self._records.get(c, ()) for c, k, _ in made):  # a key taken, even by an expired record
                return None
            for c, k, t in made:
                self._store(_Row(c, k, t, 1, now, now, None, None), None)
            rec = _Row(collection, key, text, old.version + 1, old.created_at, now, old.expires_at, old.due)
            self._store(rec, old)
            return rec.record()

    async def take(self, collection: str, key: str, *, expected_version: int | None = None) -> Record | None:
        with self._lock:
            self._check_open()
            old = self._live(collection, key, self.clock())
            if old is None or (expected_version is not None and old.version != expected_version):
                return None
            self._drop(old)
        return old.record()  # decoded outside the lock: nobody else can see the row any more

    async def delete(self, collection: str, key: str) -> bool:
        with self._lock:
            self._check_open()
            old = self._live(collection, key, self.clock())
            if old is None:
                return False
            self._drop(old)
            return True

    async def scan(
        self,
        collection: str,
        *,
        where: Mapping[str, Any] | None = None,
        prefix: str = "",
        limit: int | None = None,
    ) -> list[Record]:
        with self._lock:
            self._check_open()
            now = self.clock()
            out: list[Record] = []
            if limit is not None and limit <= 0:
                return out
            needles = prefilters(where)  # decode only the records whose text can match
            for key in sorted(self._records.get(collection, {})):
                if not key.startswith(prefix):
                    continue
                rec = self._live(collection, key, now)
                if rec is None or (needles and not all(n in rec.text for n in needles)):
                    continue
                copied = rec.record()
                if where and any(copied.value.get(k, _MISSING) != v for k, v in where.items()):
                    continue
                out.append(copied)
                if limit is not None and len(out) >= limit:
                    break
            return out

    async def due(self, collection: str, *, before: float, limit: int = 100) -> list[Record]:
        with self._lock:
            self._check_open()
            now = self.clock()
            out: list[Record] = []
            index = self._due.get(collection, [])
            i = 0
            while i < len(index) and len(out) < limit:
                at, key = index[i]
                if at > before:
                    break
                rec = self._live(collection, key, now)
                if rec is None:  # expired: _live dropped it from the index
                    continue
                out.append(rec.record())
                i += 1
            return out

    # ----------------------------------------------------------- streams
    async def append(self, stream: str, value: Mapping[str, Any]) -> StreamEntry:
        data = check_value(stream, "append", value)
        with self._lock:
            self._check_open()
            seq = self._seq.get(stream, 0) + 1
            self._seq[stream] = seq
            entry = StreamEntry(stream, seq, data, self.clock())
            self._streams.setdefault(stream, []).append(entry)
            return StreamEntry(stream, seq, copy_value(data), entry.at)

    async def read(self, stream: str, *, after: int = 0, limit: int | None = None) -> list[StreamEntry]:
        with self._lock:
            self._check_open()
            entries = self._streams.get(stream, [])
            start = bisect.bisect_right([e.seq for e in entries], after)
            chosen = entries[start:] if limit is None else entries[start : start + limit]
            return [StreamEntry(e.stream, e.seq, copy_value(e.value), e.at) for e in chosen]

    async def trim(self, stream: str, *, keep_last: int) -> int:
        with self._lock:
            self._check_open()
            entries = self._streams.get(stream, [])
            drop = max(0, len(entries) - max(0, keep_last))
            if drop:
                self._streams[stream] = entries[drop:]
            return drop

    # ------------------------------------------------------------- rates
    async def hit(self, key: str, *, cost: int, limit: int, window: float) -> RateDecision:
        with self._lock:
            self._check_open()
            now = self.clock()
            hits = self._hits.setdefault(key, deque())
            while hits and hits[0][0] <= now - window:
                hits.popleft()
            used = sum(c for _, c in hits)
            if used + cost > limit:
                return RateDecision(False, 0, _retry_after(hits, used, cost, limit, window, now))
            hits.append((now, cost))
            return RateDecision(True, limit - used - cost, 0.0)

    async def purge_expired(self) -> int:
        with self._lock:
            self._check_open()
            now = self.clock()
            n = 0
            for coll in self._records.values():
                for rec in [r for r in coll.values() if r.expires_at is not None and r.expires_at <= now]:
                    self._drop(rec)
                    n += 1
            return n

    async def close(self) -> None:
        with self._lock:
            self._closed = True


_MISSING = object()


def _retry_after(hits: deque[tuple[float, int]], used: int, cost: int, limit: int, window: float, now: float) -> float:
    """Seconds until enough old hits leave the window for ``cost`` to fit."""
    if cost > limit:
        return math.inf
    need = used + cost - limit
    freed = 0
    for at, c in hits:
        freed += c
        if freed >= need:
            return max(0.0, at + window - now)
    return window

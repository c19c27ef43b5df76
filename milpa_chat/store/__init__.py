"""Durable state behind one small protocol: :class:`MemoryStore`, :class:`SqliteStore`, :class:`PostgresStore`.

``SqliteStore`` and ``PostgresStore`` are imported on first use, so ``import milpa_chat.store``
stays cheap and ``psycopg`` is only needed when PostgreSQL is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from milpa_chat.store.base import KEEP, RateDecision, Record, Store, StreamEntry
from milpa_chat.store.memory import MemoryStore

if TYPE_CHECKING:
    from milpa_chat.store.postgres import PostgresStore
    from milpa_chat.store.sqlite import SqliteStore

__all__ = [
    "KEEP",
    "MemoryStore",
    "PostgresStore",
    "RateDecision",
    "Record",
    "SqliteStore",
    "Store",
    "StreamEntry",
    "open_store",
]


def __getattr__(name: str) -> Any:
    if name == "SqliteStore":
        from milpa_chat.store.sqlite import SqliteStore

        return SqliteStore
    if name == "PostgresStore":
        from milpa_chat.store.postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module 'milpa_chat.store' has no attribute {name!r}")


def open_store(url: str) -> Store:
    """Open a store from a URL: ``memory://``, ``sqlite:///path/to/file.db`` (or a plain path
    ending in ``.db``/``.sqlite``), ``postgresql://user@host:5432/db``."""
    if url in ("memory", "memory://", ":memory:"):
        return MemoryStore()
    if url.startswith(("postgresql://", "postgres://")):
        from milpa_chat.store.postgres import PostgresStore

        return PostgresStore(url)
    if url.startswith("sqlite:///"):
        url = url[len("sqlite:///") :]
    elif url.startswith("sqlite://"):
        raise ValueError(f"store URL {url!r}: write sqlite:///relative/path.db or sqlite:////absolute/path.db")
    elif "://" in url:
        raise ValueError(
            f"store URL {url!r} has an unknown scheme; use memory://, sqlite:///file.db or postgresql://..."
        )
    from milpa_chat.store.sqlite import SqliteStore

    return SqliteStore(url)

"""The statements of :class:`~milpa_chat.store.sqlite.SqliteStore`, built once at import.

A record's write binds its values by position (``?N``: no name looked up per parameter) and returns only the
columns its caller cannot know: not the value it just wrote, nor a version it can count, which SQLite would
copy into a table of results and back. An ``update`` that keeps the expiry or the due time leaves that column
out of its ``SET`` list, so SQLite leaves the index over it untouched (a column set, even to its own value,
rewrites the index entry).
"""

from __future__ import annotations

from typing import Any

from milpa_chat.store._sql import prefilters, prefix_upper

__all__ = [
    "COLS",
    "DELETE",
    "DUE",
    "GET",
    "INSERT",
    "INSERT_NEW",
    "PUT",
    "TAKE",
    "TAKE_VERSION",
    "UPDATE",
    "UPDATE_ANY",
    "scan_query",
]

COLS = "key, value, version, created_at, updated_at, expires_at, due"


def _live(now: str) -> str:
    """The record is live at ``now`` (a parameter)."""
    return f"(expires_at IS NULL OR expires_at > {now})"


# Parameters: (collection, key, now).
GET = f"SELECT {COLS} FROM milpa_records WHERE collection = ?1 AND key = ?2 AND {_live('?3')}"
# Parameters: (collection, key, value, now, expires_at, due). Inserted or reused: the cursor's rowcount is 1.
INSERT = (
    "INSERT INTO milpa_records VALUES (?1, ?2, ?3, 1, ?4, ?4, ?5, ?6) "
    "ON CONFLICT (collection, key) DO UPDATE SET value = ?3, version = 1, created_at = ?4, "
    f"updated_at = ?4, expires_at = ?5, due = ?6 WHERE NOT {_live('?4')}"
)
# Parameters: (collection, key, value, now). Fails (IntegrityError) when the key holds a record, live or expired.
INSERT_NEW = "INSERT INTO milpa_records VALUES (?1, ?2, ?3, 1, ?4, ?4, NULL, NULL)"
# Parameters: as INSERT; returns (version, created_at).
PUT = (
    "INSERT INTO milpa_records VALUES (?1, ?2, ?3, 1, ?4, ?4, ?5, ?6) "
    "ON CONFLICT (collection, key) DO UPDATE SET value = ?3, "
    f"version = CASE WHEN {_live('?4')} THEN version + 1 ELSE 1 END, "
    f"created_at = CASE WHEN {_live('?4')} THEN created_at ELSE ?4 END, "
    "updated_at = ?4, expires_at = ?5, due = ?6 RETURNING version, created_at"
)


def _update(keep_expiry: bool, keep_due: bool, *, version: bool) -> str:
    """The compare-and-set of one record. Parameters: (value, now, collection, key, expected version), then
    the new expiry unless it is kept, then the new due time unless it is kept. Returns ``created_at``, then
    ``expires_at`` if kept, then ``due`` if kept, then (``version``) the new version."""
    sets = ["value = ?1", "version = version + 1", "updated_at = ?2"]
    returning = ["created_at"]
    n = 5
    for column, keep in (("expires_at", keep_expiry), ("due", keep_due)):
        if keep:
            returning.append(column)
        else:
            n += 1
            sets.append(f"{column} = ?{n}")
    if version:
        returning.append("version")
    return (
        f"UPDATE milpa_records SET {', '.join(sets)} WHERE collection = ?3 AND key = ?4 AND version = ?5 "
        f"AND {_live('?2')} RETURNING {', '.join(returning)}"
    )


_KEEPS = [(keep_expiry, keep_due) for keep_expiry in (False, True) for keep_due in (False, True)]
#: ``UPDATE[keep_expiry, keep_due]``: for an ``int`` expected version (the new one is the next).
UPDATE = {keeps: _update(*keeps, version=False) for keeps in _KEEPS}
#: The same for an expected version of another type, which SQLite may compare as equal: it returns the version.
UPDATE_ANY = {keeps: _update(*keeps, version=True) for keeps in _KEEPS}
# Parameters: (collection, key, now), then the expected version for TAKE_VERSION.
TAKE = f"DELETE FROM milpa_records WHERE collection = ?1 AND key = ?2 AND {_live('?3')} RETURNING {COLS}"
TAKE_VERSION = (
    f"DELETE FROM milpa_records WHERE collection = ?1 AND key = ?2 AND {_live('?3')} AND version = ?4 RETURNING {COLS}"
)
# Parameters: (collection, key).
DELETE = "DELETE FROM milpa_records WHERE collection = ?1 AND key = ?2 RETURNING expires_at"


def scan_query(collection: str, where: dict[str, Any], prefix: str, now: float) -> tuple[str, dict[str, Any]]:
    """The live records of ``collection`` under ``prefix`` by key, those whose text holds every
    :func:`~milpa_chat.store._sql.prefilters` needle of ``where`` (the caller still matches each)."""
    sql = f"SELECT {COLS} FROM milpa_records WHERE collection = :c AND key >= :lo AND {_live(':now')}"
    params: dict[str, Any] = {"c": collection, "lo": prefix, "now": now}
    upper = prefix_upper(prefix)
    if upper is not None:
        sql += " AND key < :hi"
        params["hi"] = upper
    for i, needle in enumerate(prefilters(where)):
        sql += f" AND instr(value, :w{i}) > 0"
        params[f"w{i}"] = needle
    return sql + " ORDER BY key", params


# Parameters: (collection, before, now, limit).
DUE = (
    f"SELECT {COLS} FROM milpa_records INDEXED BY milpa_records_due WHERE collection = ?1 "
    f"AND due IS NOT NULL AND due <= ?2 AND {_live('?3')} ORDER BY due, key LIMIT ?4"
)

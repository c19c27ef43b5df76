"""JSON written and compared one way everywhere: strict identity, compact spellings, digests."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["compact_json", "identical", "sha256_text"]


def identical(a: Any, b: Any) -> bool:
    """Same JSON type and same value, recursively: ``True`` is not ``1``, ``1`` is not ``1.0``."""
    kind_a, kind_b = _json_kind(a), _json_kind(b)
    if kind_a != kind_b:
        return False
    if kind_a == "object":
        return list(a) == list(b) and all(identical(a[k], b[k]) for k in a)
    if kind_a == "array":
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    for kind, types in (("boolean", bool), ("integer", int), ("number", float), ("string", str)):
        if isinstance(value, types):
            return kind
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def compact_json(value: Any, *, escape: bool) -> str:
    """The compact spelling: an empty map is ``[]``; with ``escape``, ``\\/`` and ``\\uXXXX``."""

    def plain(v: Any) -> Any:
        if isinstance(v, Mapping):
            return {str(k): plain(x) for k, x in v.items()} if v else []
        if isinstance(v, list | tuple):
            return [plain(x) for x in v]
        return v

    text = json.dumps(plain(value), separators=(",", ":"), ensure_ascii=escape)
    return text.replace("/", "\\/") if escape else text


def sha256_text(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

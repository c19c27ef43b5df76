"""The redaction rule of the audit log (DESIGN, Decision 8), used for everything renderers show.

Renderers never keep a rule of their own: this module re-exports
:func:`milpa_chat.runtime.audit.redact`, so a card, a result and an audit line hide exactly
the same keys (``apiKey``, ``api-key``, ``API_KEY``, ``Authorization``, ``client_secret``,
``password``, ``access_token``, ... at any depth; case- and separator-insensitive).

Renderers apply the rule while converting data to plain JSON (:func:`to_plain` with
``hide=hide_key``: one walk instead of two over a megabyte result); :func:`hide_key` is the
audit log's own predicate, cached per key.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from milpa_chat.renderers import _plain
from milpa_chat.runtime.audit import REDACTED, redact
from milpa_chat.runtime.audit import is_sensitive_key as is_secret_key

__all__ = ["REDACTED", "hide_key", "is_secret_key", "redact", "redacted_plain"]

assert _plain.REDACTED == REDACTED, "renderers and the audit log must write the same marker"


@lru_cache(maxsize=8192)
def hide_key(key: str) -> bool:
    """True when the audit log would hide the value of ``key``."""
    return is_secret_key(key)


def redacted_plain(value: Any) -> Any:
    """``value`` as plain JSON data with the audit log's redaction applied."""
    return _plain.to_plain(value, hide_key)

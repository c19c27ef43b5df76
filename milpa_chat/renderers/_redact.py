"""The redaction rule shared with the audit log (DESIGN, Decision 8).

A value is hidden when its *key* names a secret. Keys are compared after lower-casing and
dropping separators (``-``, ``_``, ``.``, spaces), so ``apiKey``, ``api-key``, ``API_KEY`` and
``Api Key`` are the same key. The rule applies at any depth of dicts and lists; the value,
whatever its type, becomes :data:`REDACTED`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Final

__all__ = ["REDACTED", "SECRET_KEYS", "is_secret_key", "redact"]

REDACTED: Final = "***REDACTED***"

#: Normalized key names (lower case, no separators) whose values are never shown.
SECRET_KEYS: Final[frozenset[str]] = frozenset(
    {
        "apikey",
        "xapikey",
        "apisecret",
        "authorization",
        "proxyauthorization",
        "auth",
        "authtoken",
        "accesstoken",
        "refreshtoken",
        "idtoken",
        "bearertoken",
        "bottoken",
        "confirmtoken",
        "token",
        "secret",
        "secretkey",
        "clientsecret",
        "signingsecret",
        "webhooksecret",
        "password",
        "passwd",
        "passphrase",
        "privatekey",
        "credentials",
        "cookie",
        "setcookie",
        "sessionid",
    }
)

_DROP_SEPARATORS = str.maketrans("", "", "-_. \t\n\r")


@lru_cache(maxsize=4096)
def _is_secret(key: str) -> bool:
    return key.translate(_DROP_SEPARATORS).lower() in SECRET_KEYS


def is_secret_key(key: object) -> bool:
    """True when ``key`` names a secret (``"API_KEY"``, ``"clientSecret"``, ``"x-api-key"``, ...)."""
    return isinstance(key, str) and _is_secret(key)


def redact(value: Any) -> Any:
    """A copy of ``value`` with the value of every secret key replaced by :data:`REDACTED`.

    Dicts (any mapping) and lists/tuples are walked at any depth; other values are returned
    as they are. The input is never modified. A container that contains itself is cut at the
    repeat (shown as ``"<cycle>"``) instead of recursing forever.
    """
    return _redact(value, set())


def _redact(value: Any, seen: set[int]) -> Any:
    if isinstance(value, Mapping):
        if id(value) in seen:
            return "<cycle>"
        seen.add(id(value))
        out = {k: REDACTED if is_secret_key(k) else _redact(v, seen) for k, v in value.items()}
        seen.discard(id(value))
        return out
    if isinstance(value, list | tuple):
        if id(value) in seen:
            return "<cycle>"
        seen.add(id(value))
        items = [_redact(v, seen) for v in value]
        seen.discard(id(value))
        return items
    return value

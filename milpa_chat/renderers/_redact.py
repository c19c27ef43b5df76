"""The redaction rule of the audit log (DESIGN, Decision 8), used for everything renderers show.

Renderers never keep a rule of their own: this module re-exports
:func:`milpa_chat.runtime.audit.redact`, so a card, a result and an audit line hide exactly
the same keys (``apiKey``, ``api-key``, ``API_KEY``, ``Authorization``, ``client_secret``,
``password``, ``access_token``, ... at any depth; case- and separator-insensitive).

The audit function walks dicts and lists without cycle detection; renderers always pass data
through :func:`milpa_chat.renderers._text.to_plain` first, which cuts cycles.
"""

from __future__ import annotations

from milpa_chat.runtime.audit import REDACTED, redact
from milpa_chat.runtime.audit import is_sensitive_key as is_secret_key

__all__ = ["REDACTED", "is_secret_key", "redact"]

"""The names renderers use for the redaction rule; the rule itself is :mod:`milpa_chat.runtime.redaction`.

Renderers keep no rule of their own: a card, a result, an attached document and an audit line
hide exactly the same keys and mask exactly the same text. :data:`hide_key` is the rule as the
converter's ``hide=`` argument (:func:`milpa_chat.renderers._plain.to_plain`): secret-keyed values
replaced and every string masked in the one walk that converts the data.
"""

from __future__ import annotations

from typing import Any

from milpa_chat.renderers import _plain
from milpa_chat.runtime.redaction import REDACTED, STANDARD, is_secret_key, mask_text, redact

__all__ = ["REDACTED", "hide_key", "is_secret_key", "mask_text", "redact", "redacted_plain"]

#: The standard rule: ``hide_key(key)`` is ``True`` for a secret key; ``hide_key.mask(text)`` masks text.
hide_key = STANDARD


def redacted_plain(value: Any) -> Any:
    """``value`` as plain JSON data with the redaction rule applied."""
    return _plain.to_plain(value, hide_key)

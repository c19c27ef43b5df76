"""The old address of standing grants on the host, now :mod:`milpa_chat.grants`.

Kept so that imports written before the move still work: this package and its old modules
(``milpa_chat.standing.desk``, ``.changes``, ``.records``, ``.chat``) name the very same objects as the new home.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from milpa_chat.grants import GrantDesk, GrantOffer, GrantRecord, Judged, changes, desk, records

if TYPE_CHECKING:
    from milpa_chat.grants.chat import GrantChat

__all__ = ["GrantChat", "GrantDesk", "GrantOffer", "GrantRecord", "Judged"]

for _old in (changes, desk, records):
    sys.modules[f"{__name__}.{_old.__name__.rsplit('.', 1)[1]}"] = _old


def __getattr__(name: str) -> object:
    if name == "GrantChat":  # the chat side loads the chat package: only when asked for
        from milpa_chat.grants.chat import GrantChat

        return GrantChat
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Standing grants on the host: kept in the store, judged before an approval, changed only by people.

* :class:`GrantDesk` (``registry.grants``) — grants, receipts and signs of life in the store (every
  backend, through the store protocol); the pipeline's ``standing`` step asks it before an approval
  is opened; :class:`GrantOffer` says what "Always allow…" drafts for an operation.
* :class:`GrantRecord` — a stored grant, read-only.
* :class:`GrantChat` — "Always allow…", ``/grants`` and the grant cards in chat.

The documents and the judge are :mod:`milpa_chat.command.grants`; this package is the host around them.
"""

from __future__ import annotations

from milpa_chat.standing.desk import GrantDesk, GrantOffer, Judged
from milpa_chat.standing.records import GrantRecord

__all__ = ["GrantChat", "GrantDesk", "GrantOffer", "GrantRecord", "Judged"]


def __getattr__(name: str) -> object:
    if name == "GrantChat":  # the chat side loads the chat package: only when asked for
        from milpa_chat.standing.chat import GrantChat

        return GrantChat
    raise AttributeError(name)

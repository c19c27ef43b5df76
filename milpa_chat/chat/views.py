"""Page views: what a paginated result's page buttons stand for (the tool, its arguments, who ran it).

A view is stored once, when the result is first shown, and never changes: its page buttons carry only its id
and a page number, so a tap can neither name another tool or other arguments nor act as someone else. It is
kept in the store for :data:`KEEP` seconds (any worker can page it), written without waiting for the disk (a
view lost to a power cut only makes its buttons say "no longer available"). The views this process wrote or
read last are also kept in memory (at most ``size``, each until its own expiry): paging through a result this
worker showed reads nothing from the store.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from milpa_chat.store.base import copy_value

if TYPE_CHECKING:
    from milpa_chat.store.base import Store

__all__ = ["KEEP", "PageViews"]

#: Seconds a view is kept (its page buttons work this long).
KEEP = 7 * 86400
COLLECTION = "views"


class PageViews:
    """Opens views (:meth:`open`) and finds them again (:meth:`find`), in ``store`` and in memory."""

    def __init__(self, store: Store, size: int = 1024) -> None:
        self.store = store
        self.size = size
        #: view id -> (the view, when it expires); the most recently used last
        self._kept: OrderedDict[str, tuple[dict[str, Any], float]] = OrderedDict()

    async def open(self, tool: str, args: dict[str, Any], principal: str | None) -> str:
        """A new view of ``tool`` called with ``args`` by ``principal``: its id (for the page buttons)."""
        view_id = secrets.token_urlsafe(9)
        value = {"tool": tool, "args": copy_value(args), "principal": principal}
        await self.store.put(COLLECTION, view_id, value, ttl=KEEP, durable=False)
        self._keep(view_id, value, self.store.clock() + KEEP)
        return view_id

    async def find(self, view_id: str) -> dict[str, Any] | None:
        """The view (never change it), or ``None`` when there is none (it expired, or never existed)."""
        kept = self._kept.get(view_id)
        if kept is not None:
            if kept[1] > self.store.clock():
                self._kept.move_to_end(view_id)
                return kept[0]
            del self._kept[view_id]
        record = await self.store.get(COLLECTION, view_id)
        if record is None:
            return None
        expires = record.expires_at if record.expires_at is not None else self.store.clock() + KEEP
        self._keep(view_id, record.value, expires)
        return record.value

    def _keep(self, view_id: str, value: dict[str, Any], expires: float) -> None:
        self._kept[view_id] = (value, expires)
        self._kept.move_to_end(view_id)
        while len(self._kept) > self.size:
            self._kept.popitem(last=False)

"""People's names on Slack: ``users.info`` (scope ``users:read``), cached, falling back to what the request said.

Slack events carry only a member id, and a slash command the person's handle; cards and answers name
people by their display name (else their full name, else their handle) when the app may read it.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from slack_sdk.web.async_client import AsyncWebClient

__all__ = ["SlackPeople"]

log = logging.getLogger("milpa_chat.bots.slack")


class SlackPeople:
    """Display names by member id, each looked up once per ``ttl`` seconds (at most ``size`` kept)."""

    def __init__(self, client: AsyncWebClient, *, ttl: float = 3600.0, size: int = 10_000) -> None:
        self.client = client
        self.ttl = ttl
        self.size = size
        self._names: OrderedDict[str, tuple[float, str | None]] = OrderedDict()
        self._told = False

    async def name(self, user_id: str) -> str | None:
        """The person's name, or ``None`` when Slack does not say (no ``users:read``, an unknown id)."""
        now = time.monotonic()
        cached = self._names.get(user_id)
        if cached is not None and now - cached[0] < self.ttl:
            return cached[1]
        found = await self._look_up(user_id)
        self._names[user_id] = (now, found)
        self._names.move_to_end(user_id)
        while len(self._names) > self.size:
            self._names.popitem(last=False)
        return found

    async def _look_up(self, user_id: str) -> str | None:
        from slack_sdk.errors import SlackApiError

        try:
            response = await self.client.users_info(user=user_id)
        except SlackApiError as exc:
            if not self._told:
                self._told = True
                log.info(
                    "Slack users.info answered %s: people are named by their ids (grant users:read to name them)",
                    exc.response.get("error"),
                )
            return None
        user = response.get("user") or {}
        profile = user.get("profile") or {}
        for name in (profile.get("display_name"), profile.get("real_name"), user.get("real_name"), user.get("name")):
            if isinstance(name, str) and name.strip():
                return name.strip()
        return None

"""``ConfirmationTokenStore``: one-time confirm tokens, snapshotting the exact arguments, in the store.

A token is bound to the tool name and the principal that asked. ``consume`` is atomic: of any
number of concurrent redemptions exactly one gets the arguments. A redemption for another tool
or another principal is refused and leaves the token in place for the right caller.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from milpa_chat.store.base import Store

__all__ = ["ConfirmationToken", "ConfirmationTokenStore", "PendingConfirmation"]

COLLECTION = "confirm_tokens"


@dataclass(frozen=True, slots=True)
class ConfirmationToken:
    token: str
    expires_at: datetime
    action_summary: str


@dataclass(frozen=True, slots=True)
class PendingConfirmation:
    """A token's stored state, read without consuming it."""

    token: str
    tool: str
    args: dict[str, Any]
    principal: str | None
    action_summary: str
    expires_at: datetime
    version: int


class ConfirmationTokenStore:
    def __init__(self, store: Store, *, ttl: float = 60.0) -> None:
        if ttl <= 0:
            raise ValueError(f"confirm token ttl must be positive seconds, got {ttl}")
        self.store = store
        self.ttl = ttl

    async def create(
        self, tool: str, args: dict[str, Any], action_summary: str, *, principal: str | None = None
    ) -> ConfirmationToken:
        token = secrets.token_hex(16)
        rec = await self.store.insert(
            COLLECTION,
            token,
            {"tool": tool, "args": args, "principal": principal, "action_summary": action_summary},
            ttl=self.ttl,
        )
        assert rec is not None and rec.expires_at is not None, "a fresh 128-bit token collided"
        return ConfirmationToken(token, datetime.fromtimestamp(rec.expires_at, UTC), action_summary)

    async def peek(self, token: str) -> PendingConfirmation | None:
        """The live token's state, without consuming it (``None`` when unknown or expired)."""
        if not isinstance(token, str) or not token:
            return None
        rec = await self.store.get(COLLECTION, token)
        if rec is None or rec.expires_at is None:
            return None
        v = rec.value
        return PendingConfirmation(
            token, v["tool"], v["args"], v.get("principal"), v.get("action_summary", ""),
            datetime.fromtimestamp(rec.expires_at, UTC), rec.version,
        )

    async def consume(self, token: str, tool: str, *, principal: str | None = None) -> dict[str, Any] | None:
        """The snapshotted arguments, exactly once; ``None`` when unknown, expired, or not this tool/principal."""
        pending = await self.peek(token)
        if pending is None or pending.tool != tool or pending.principal != principal:
            return None
        taken = await self.store.take(COLLECTION, token, expected_version=pending.version)
        return None if taken is None else pending.args

    async def is_valid(self, token: str, tool: str) -> bool:
        pending = await self.peek(token)
        return pending is not None and pending.tool == tool

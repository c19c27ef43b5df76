"""Rate limiting per ``channel:principal:tool`` in the store (a real sliding window)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.definition import ToolDefinition
    from milpa_chat.store.base import Store

__all__ = ["RateLimitDenial", "RateLimiter"]


@dataclass(frozen=True, slots=True)
class RateLimitDenial:
    key: str
    reason: str
    retry_after: float


class RateLimiter:
    """A sliding window of ``limit`` tokens per ``window`` seconds per ``channel:principal:tool``.

    A call costs ``cost`` tokens, a mutating call ``mutating_cost``. The window lives in the
    store, so several workers sharing one database share the budget.
    """

    def __init__(
        self,
        store: Store,
        *,
        limit: int = 100,
        window: float = 60.0,
        cost: int = 1,
        mutating_cost: int = 5,
    ) -> None:
        if limit < 1 or window <= 0 or cost < 1 or mutating_cost < 1:
            raise ValueError(
                "RateLimiter needs limit >= 1, window > 0 and costs >= 1 "
                f"(got limit={limit}, window={window}, cost={cost}, mutating_cost={mutating_cost})"
            )
        self.store = store
        self.limit = limit
        self.window = window
        self.cost = cost
        self.mutating_cost = mutating_cost

    @staticmethod
    def key(ctx: ToolContext, tool: str) -> str:
        return f"{ctx.channel}:{ctx.principal or ''}:{tool}"

    async def check(self, ctx: ToolContext, tool: ToolDefinition) -> RateLimitDenial | None:
        """Record one call, or return why it is refused (nothing is recorded then)."""
        key = self.key(ctx, tool.name)
        cost = self.mutating_cost if tool.mutating else self.cost
        decision = await self.store.hit(f"rate:{key}", cost=cost, limit=self.limit, window=self.window)
        if decision.allowed:
            return None
        retry = decision.retry_after
        when = "never (the call costs more than the whole budget)" if math.isinf(retry) else (f"in {math.ceil(retry)}s")
        return RateLimitDenial(
            key,
            f"Rate limit exceeded for '{key}': max {self.limit} tokens per {self.window:g}s — retry {when}.",
            retry,
        )

"""The route of page buttons: the next page of a paginated result, for the person who ran it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from milpa_chat.chat.inbound import MessageRef

if TYPE_CHECKING:
    from milpa_chat.chat.inbound import Inbound
    from milpa_chat.chat.surface import Surface
    from milpa_chat.chat.views import PageViews
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.registry import ToolRegistry
    from milpa_chat.runtime.result import ToolResult

__all__ = ["PageTaps"]

ContextFor = Callable[["Inbound"], "ToolContext"]
OpenApproval = Callable[["Inbound", str, "ToolResult"], Awaitable[bool]]
Present = Callable[..., Awaitable["MessageRef | None"]]


class PageTaps:
    """ "Page N": the stored view's tool and arguments with ``page=N``, edited into the message tapped.

    ``once(inbound)``: records the tap's delivery in the store (a page of a tool with effects asks for a
    decision again: once per tap, on any worker). ``open_approval`` / ``present``: the assistant's."""

    def __init__(
        self,
        registry: ToolRegistry,
        views: PageViews,
        context_for: ContextFor,
        once: Callable[[Inbound], Awaitable[bool]],
        open_approval: OpenApproval,
        present: Present,
    ) -> None:
        self.registry = registry
        self.views = views
        self.context_for = context_for
        self.once = once
        self.open_approval = open_approval
        self.present = present

    def check(self, inbound: Inbound, surface: Surface) -> bool:
        return inbound.kind == "action" and inbound.action == "page"

    async def handle(self, inbound: Inbound, surface: Surface) -> bool:
        view_id, _, page_text = (inbound.ref or "").rpartition(":")
        view = await self.views.find(view_id) if view_id else None
        ctx = self.context_for(inbound)
        if view is None or not page_text.isdigit():
            await surface.answer(inbound, "These results are no longer available; run the command again.", alert=True)
            return True
        if view["principal"] != ctx.principal:
            await surface.answer(inbound, "Only the person who ran this can page through it.", alert=True)
            return True
        definition = self.registry.get(view["tool"])
        effects = definition is None or definition.mutating
        if effects and inbound.delivery_id is not None and not await self.once(inbound):
            return True  # a page of a tool with effects asks for a decision again: once per tap, on any worker
        await surface.answer(inbound, f"Page {page_text}")
        args: dict[str, Any] = {**view["args"], "page": int(page_text)}
        result = await self.registry.call(view["tool"], args, ctx)
        if await self.open_approval(inbound, view["tool"], result):
            return True  # this page is a call of its own that asks for a decision: a card of its own
        ref_msg = MessageRef(inbound.surface, inbound.chat_id, inbound.message_id) if inbound.message_id else None
        await self.present(
            surface,
            inbound.chat_id,
            view["tool"],
            args,
            ctx,
            result,
            edit=ref_msg,
            view=view_id if ref_msg is not None else None,
        )
        return True

"""``McpClientService``: the registry as the model sees it — a catalogue and calls that return ``ToolResult``s.

Every call goes through the whole :class:`~milpa_chat.runtime.ToolRegistry` pipeline (validate ->
authorize -> rate limit -> confirm / verify gates -> execute -> audit) under this service's
:class:`~milpa_chat.runtime.ToolContext`, and the whole result comes back: the agent loop needs to
tell a confirmation request or a blocked call from data.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.result import ErrorCode, ToolResult

if TYPE_CHECKING:
    from milpa_chat.gateway.gates import OptionTable
    from milpa_chat.runtime.registry import ToolRegistry

__all__ = ["McpClientService", "result_for_model"]


class McpClientService:
    """Tool summaries for the model and calls through the pipeline, for one caller.

    ``context`` is who the agent acts for (``ToolContext.cli()``, full access, when omitted: pass
    the chat user's context in a bot). ``options``: an :class:`~milpa_chat.gateway.OptionTable`
    whose removed options are left out of the catalogue. ``hidden``: tools the model never sees
    and cannot call (a chat agent hides ``resolve_verification``: approvals are for people).

    Every call is model-made (``context.as_model()``): whatever the model puts in its arguments, it
    never confirms, approves or runs an approval, and ``confirm_token`` / ``verification_id`` are
    refused; the person decides on the card.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        context: ToolContext | None = None,
        *,
        options: OptionTable | None = None,
        hidden: Iterable[str] = (),
    ) -> None:
        self.registry = registry
        self.context = (context or ToolContext.cli()).as_model()
        self.options = options
        self.hidden = frozenset(hidden)

    def set_context(self, context: ToolContext) -> McpClientService:
        self.context = context.as_model()
        return self

    def get_tool_summaries(self, options: OptionTable | None = None) -> list[dict[str, Any]]:
        """``[{name, description, inputSchema, ...}]`` this caller may use, minus hidden and removed options.

        ``options`` (else the service's own table) is asked on every call, never cached.
        """
        table = options if options is not None else self.options
        removed = set(table.removed()) if table is not None else set()
        return [
            s
            for s in self.registry.get_tool_summaries(self.context)
            if s["name"] not in self.hidden and s["name"] not in removed
        ]

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        """Run ``name`` through the registry pipeline; never raises for a runtime outcome."""
        if name in self.hidden:
            return ToolResult.error(f"Tool not found: {name}.", code=ErrorCode.TOOL_NOT_FOUND, meta={"tool": name})
        return await self.registry.call(name, dict(arguments or {}), self.context)


def result_for_model(result: ToolResult) -> str:
    """The tool message content a model reads: compact JSON of what matters, without the registry's bookkeeping."""
    body: dict[str, Any] = {"success": result.success}
    if result.success:
        body["data"] = result.data
        if result.message:
            body["message"] = result.message
    else:
        body["error"] = result.error or "Tool execution failed"
        if result.code:
            body["code"] = result.code
        if result.data is not None:
            body["data"] = result.data
    for key in ("pagination", "decision", "suggestion"):
        if result.meta.get(key) is not None:
            body[key] = result.meta[key]
    return json.dumps(body, ensure_ascii=False, default=str)

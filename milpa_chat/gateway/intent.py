"""``NamedTargetCheck``: the intent contract (``namedTarget``), enforced where the session is held.

An operation may declare that the value of one of its arguments (its *named target*) must have been
named by the person who asked. An agent that calls it with a value the person's request never
mentions ("remove the old note" -> ``delete_note(note_id=2)``) gets no execution: the call becomes a
question to the person — a card "Your request did not mention '2' (the note_id to act on)..." with
Confirm / Cancel — and only their Confirm lets it run, with that value (exactly once, through the one
approval record). Named means the trimmed value occurs in the request, case-insensitively
(mechanical, no model involved; a false positive is an answerable question, never a block).

A :class:`~milpa_chat.gateway.McpClientService` for one request; everything else is as there. Tools
that need an approver (``verify=``) are left to their approvers, who see the arguments on the card.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from milpa_chat.gateway.mcp_client import McpClientService
from milpa_chat.runtime.definition import InvalidArguments
from milpa_chat.runtime.result import ToolResult

if TYPE_CHECKING:
    from milpa_chat.gateway.gates import OptionTable
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.definition import ToolDefinition
    from milpa_chat.runtime.registry import ToolRegistry

__all__ = ["NamedTargetCheck", "is_named"]


def is_named(value: object, request: str) -> bool:
    """Whether ``value`` (as text, trimmed) occurs in ``request``, case-insensitively."""
    text = str(value).strip().casefold()
    return bool(text) and text in request.casefold()


class NamedTargetCheck(McpClientService):
    """The tools of an agent run on behalf of a person who asked ``request``."""

    def __init__(
        self,
        registry: ToolRegistry,
        context: ToolContext | None = None,
        *,
        request: str,
        options: OptionTable | None = None,
        hidden: Iterable[str] = (),
    ) -> None:
        super().__init__(registry, context, options=options, hidden=hidden)
        self.request = request

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        args = dict(arguments or {})
        definition = self.registry.get(name) if name not in self.hidden else None
        question = self._question(definition, args)
        if question is None or definition is None:
            return await super().call_tool(name, args)
        try:
            wire = definition.validator(args).wire
        except InvalidArguments:  # the pipeline says what is wrong with them
            return await super().call_tool(name, args)
        if await self.registry.policy.authorize(self.context, definition) is not None:
            return await super().call_tool(name, args)  # ... and who may not call it
        return await self._ask(definition, wire, question)

    def _question(self, definition: ToolDefinition | None, args: Mapping[str, Any]) -> str | None:
        if definition is None or definition.verify is not None:
            return None
        target = definition.extra.get("named_target")
        if not isinstance(target, str) or "confirm_token" in args or "verification_id" in args:
            return None
        value = args.get(target)
        if not isinstance(value, str | int) or isinstance(value, bool) or not str(value).strip():
            return None
        if not self.request.strip() or is_named(value, self.request):
            return None
        return (
            f"Your request did not mention {str(value).strip()!r} (the {target} to act on). Run "
            f"{definition.name} on it? Confirm only if that is what you meant."
        )

    async def _ask(self, definition: ToolDefinition, wire: dict[str, Any], question: str) -> ToolResult:
        registry = self.registry
        shown = registry.audit.redact(wire)
        summary = f"{definition.name}(" + ", ".join(f"{k}={v}" for k, v in shown.items()) + ")"
        approval = await registry.approvals.open(
            "confirm",
            self.context,
            tool=definition.name,
            args=wire,
            summary=summary,
            expires_in=registry.confirmations.ttl,
            reason=question,
            mutating=definition.mutating,
            idempotent=definition.idempotent,
        )
        data = {
            "requires_confirmation": True,
            "confirm_token": approval.id,
            "action_summary": summary,
            "expires_at": approval.expires_at_iso,
            "mutating": definition.mutating,
            "question": question,
            "reason": "target_not_named",
        }
        meta = {
            "tool": definition.name,
            "type": "confirmation",
            "requires_confirmation": True,
            "approval_id": approval.id,
            "channel": self.context.channel,
            "principal": self.context.principal,
        }
        return ToolResult(True, data, question, None, meta)

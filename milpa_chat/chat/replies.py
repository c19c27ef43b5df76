"""What the assistant tells the person who wrote: help built from their own tools, who they are, why a call
was refused and how to write it — each a reply only the actor sees where the surface has one.

A transport with ``whisper(inbound, message)`` (Slack: ``chat.postEphemeral``) shows these to the actor
alone; others post them in the chat (a Telegram private chat is the actor's own).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from milpa_chat.chat import cards
from milpa_chat.renderers.model import Heading, ItemList, Message, Note, Paragraph, Span

if TYPE_CHECKING:
    from milpa_chat.chat.inbound import Inbound, MessageRef
    from milpa_chat.chat.surface import Transport
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.definition import ToolDefinition
    from milpa_chat.runtime.registry import ToolRegistry
    from milpa_chat.runtime.result import ToolResult

__all__ = [
    "approval_stats",
    "denial",
    "examples",
    "help_message",
    "identity_line",
    "privately",
    "refusal",
    "start_message",
]

#: Result codes shown to the actor alone: what they may not do, or how they wrote it wrong.
REFUSALS = frozenset({"FORBIDDEN", "UNAUTHORIZED", "VALIDATION_ERROR", "TOOL_NOT_FOUND", "RATE_LIMITED"})


async def privately(transport: Transport, inbound: Inbound, message: Message) -> MessageRef | None:
    """Show ``message`` to the actor alone where the surface can (``whisper``), else in the chat."""
    if transport.traits.whispers:
        await transport.whisper(inbound, message)
        return None
    return await transport.send(inbound.chat_id, message)


# ----------------------------------------------------------------------------------------------- help
def _sample(prop: Mapping[str, Any]) -> Any:
    """A value to show for a parameter: its first enum value or example, else one of its type."""
    if prop.get("enum"):
        return prop["enum"][0]
    if prop.get("examples"):
        return prop["examples"][0]
    if "default" in prop and prop["default"] not in (None, "", [], {}):
        return prop["default"]
    types = prop.get("type")
    kinds = types if isinstance(types, list) else [types]
    for kind in kinds:
        if kind in ("integer", "number"):
            return max(int(prop.get("minimum", 5)), 5)
        if kind == "boolean":
            return True
        if kind == "array":
            return ["a", "b"]
    return "two words"


def _word(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ",".join(_word(v) for v in value)
    text = str(value)
    return f'"{text}"' if " " in text else text


def examples(summaries: Sequence[Mapping[str, Any]], prefix: str = "/") -> tuple[str, ...]:
    """The three ways to write arguments, each shown with one of ``summaries`` (the actor's own tools)."""
    with_props = [s for s in summaries if s["inputSchema"].get("properties")]
    if not with_props:
        return (
            f'{prefix}<tool> 5 "two words" — values in parameter order',
            f'{prefix}<tool> name="two words" page=2 — named values',
            f'{prefix}<tool> {{"name": "two words"}} — a JSON object',
        )
    required = [s for s in with_props if s["inputSchema"].get("required")] or with_props
    first = required[0]
    schema = first["inputSchema"]
    order = list(schema.get("required") or list(schema["properties"])[:1])
    positional = " ".join(_word(_sample(schema["properties"][p])) for p in order)
    named_tool = max(with_props, key=lambda s: len(s["inputSchema"]["properties"]))
    props = named_tool["inputSchema"]["properties"]
    chosen = list(props)[:2]
    named = " ".join(f"{p}={_word(_sample(props[p]))}" for p in chosen)
    as_json = json.dumps({chosen[0]: _sample(props[chosen[0]])}, ensure_ascii=False)
    return (
        f"{prefix}{first['name']} {positional} — values in parameter order",
        f"{prefix}{named_tool['name']} {named} — named values",
        f"{prefix}{named_tool['name']} {as_json} — a JSON object",
    )


def identity_line(ctx: ToolContext) -> str:
    """Who the actor is here, and what they hold (what an administrator needs to grant them more)."""
    if ctx.scopes:
        return f"You are {ctx.principal}, with the scopes {', '.join(ctx.scopes)}."
    return (
        f"You are {ctx.principal} and hold no scopes here yet: ask an administrator to give "
        f"{ctx.principal} a role in the identities."
    )


def help_message(name: str, prefix: str, summaries: Sequence[Mapping[str, Any]]) -> Message:
    """``/help``: how to write commands, with examples from the actor's own tools."""
    p = prefix
    return Message(
        (
            Heading(name, "🤖"),
            Paragraph.of("Every tool is a command. Send ", Span(f"{p}tools", "code"), " to see yours."),
            ItemList(examples(summaries, p)),
            Note("Actions that change things ask you to confirm; some need an approver."),
        ),
        f"{name}: send {p}tools to see what you can do",
    )


def start_message(name: str, prefix: str, summaries: Sequence[Mapping[str, Any]], ctx: ToolContext) -> Message:
    """``/start``: the help, and who the actor is (their principal and scopes)."""
    message = help_message(name, prefix, summaries)
    who = Paragraph.of(identity_line(ctx))
    return Message((message.blocks[0], who, *message.blocks[1:]), message.summary, message.tone)


# ------------------------------------------------------------------------------------------- refusals
def denial(name: str, definition: ToolDefinition | None, ctx: ToolContext, reason: str, prefix: str = "/") -> str:
    """A refused call in words: the missing scope when that was it, and who the actor is."""
    scopes = tuple(definition.scopes) if definition is not None else ()
    if scopes and not ctx.has_any_scope(scopes):
        needs = scopes[0] if len(scopes) == 1 else "one of " + ", ".join(scopes)
        held = f"the scopes {', '.join(ctx.scopes)}" if ctx.scopes else "no scopes"
        return (
            f"{prefix}{name} needs the scope {needs}. You are {ctx.principal}, with {held}: ask an "
            f"administrator to grant {scopes[0]} to {ctx.principal}."
        )
    return f"{reason.rstrip('.')}. (You are {ctx.principal}.)"


def refusal(
    result: ToolResult, name: str, definition: ToolDefinition | None, ctx: ToolContext, prefix: str = "/"
) -> Message | None:
    """The private answer to a refused call (denied, or its arguments did not validate), else ``None``."""
    code = result.code
    if result.success or code not in REFUSALS:
        return None
    if code in ("FORBIDDEN", "UNAUTHORIZED"):
        return cards.text(denial(name, definition, ctx, result.error or "Not allowed", prefix), tone="error")
    message = cards.result_message(result)
    if code != "VALIDATION_ERROR" or definition is None:
        return message
    usage = Paragraph.of(f"Usage: {cards.usage(definition.name, definition.input_schema, prefix)}")
    return Message((*message.blocks, usage), message.summary, message.tone, message.truncated, message.full)


async def approval_stats(registry: ToolRegistry, ctx: ToolContext, days: float = 30.0) -> Message:
    """``/approvals``: how each approver decided lately (for people who approve here)."""
    from milpa_chat.runtime.approval_stats import approver_stats

    approver_scopes = {s for t in registry if t.verify for s in t.verify.approver_scopes}
    if not approver_scopes or not ctx.has_any_scope(approver_scopes):
        return cards.text("Approval figures are for approvers; you approve nothing here.")
    since = registry.store.clock() - days * 86400
    stats = approver_stats(await registry.approvals.listing(), since=since)
    if not stats:
        return cards.text(f"No approvals were decided in the last {days:.0f} days.")
    lines = "\n".join(f"• {s.line()}" for s in stats)
    return cards.text(f"Approvals in the last {days:.0f} days:\n{lines}")

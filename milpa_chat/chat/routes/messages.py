"""Routes of what people write: the answer to a prompt, standing-grant commands and buttons, ``/approvals``,
the built-in commands, tool commands, and free text (the agent, or a hint)."""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from milpa_chat.chat import cards
from milpa_chat.chat.commands import CommandError, parse_arguments
from milpa_chat.chat.replies import approval_stats, help_message, privately, start_message
from milpa_chat.chat.routes.base import command_of

if TYPE_CHECKING:
    from milpa_chat.chat.editing import ApprovalEditor
    from milpa_chat.chat.inbound import Inbound
    from milpa_chat.chat.surface import Surface
    from milpa_chat.renderers.model import Message
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.registry import ToolRegistry
    from milpa_chat.runtime.result import ToolResult

__all__ = [
    "BUILTIN",
    "HIDDEN",
    "AgentText",
    "ApprovalStats",
    "BuiltinCommands",
    "GrantRoutes",
    "OtherBots",
    "PromptReplies",
    "ToolCommands",
]

BUILTIN = ("start", "help", "tools")
#: Tools driven by buttons, not listed as commands.
HIDDEN = frozenset({"resolve_verification"})
ContextFor = Callable[["Inbound"], "ToolContext"]
RunTool = Callable[["Inbound", "Surface", str, dict[str, Any], "ToolContext"], Awaitable["ToolResult"]]
Agent = Callable[["Inbound", "ToolContext"], Awaitable["str | Message | None"]]


class PromptReplies:
    """A message that answers a prompt the assistant sent (a new value for an edit, a reason to approve)."""

    def __init__(self, editor: ApprovalEditor) -> None:
        self.editor = editor

    def check(self, inbound: Inbound, surface: Surface) -> bool:
        return inbound.kind != "action"

    async def handle(self, inbound: Inbound, surface: Surface) -> bool:
        if not await self.editor.awaiting(inbound):
            return False
        await self.editor.on_reply(inbound, surface)
        return True


class GrantRoutes:
    """Standing grants' commands and buttons (``milpa_chat.grants.GrantChat``, once it is attached)."""

    def __init__(self, grants: Callable[[], Any]) -> None:
        self.grants = grants

    def check(self, inbound: Inbound, surface: Surface) -> bool:
        grants = self.grants()
        if grants is None:
            return False
        if inbound.kind == "action":
            return bool(grants.knows_action(inbound.action or ""))
        command = command_of(inbound, surface)
        return command is not None and bool(grants.knows_command(command.name))

    async def handle(self, inbound: Inbound, surface: Surface) -> bool:
        grants = self.grants()
        if inbound.kind == "action":
            await grants.on_action(inbound, surface, inbound.action or "", inbound.ref or "")
        else:
            await grants.on_command(inbound, surface)
        return True


class OtherBots:
    """A command addressed to another bot in a group (``/cmd@otherbot``): not ours, nothing is said."""

    def check(self, inbound: Inbound, surface: Surface) -> bool:
        return inbound.kind == "command" and command_of(inbound, surface) is None

    async def handle(self, inbound: Inbound, surface: Surface) -> bool:
        return True


class ApprovalStats:
    """``/approvals``: how each approver decided lately (unless a tool of that name exists)."""

    def __init__(self, registry: ToolRegistry, context_for: ContextFor) -> None:
        self.registry = registry
        self.context_for = context_for

    def check(self, inbound: Inbound, surface: Surface) -> bool:
        command = command_of(inbound, surface)
        return command is not None and command.name == "approvals" and "approvals" not in self.registry

    async def handle(self, inbound: Inbound, surface: Surface) -> bool:
        await privately(surface, inbound, await approval_stats(self.registry, self.context_for(inbound), 30.0))
        return True


class BuiltinCommands:
    """``/start`` (who you are, and how to write commands), ``/help`` and ``/tools``, from the actor's tools."""

    def __init__(self, registry: ToolRegistry, context_for: ContextFor, name: Callable[[], str]) -> None:
        self.registry = registry
        self.context_for = context_for
        self.name = name

    def check(self, inbound: Inbound, surface: Surface) -> bool:
        command = command_of(inbound, surface)
        return command is not None and command.name in BUILTIN

    async def handle(self, inbound: Inbound, surface: Surface) -> bool:
        command = command_of(inbound, surface)
        assert command is not None
        ctx, prefix = self.context_for(inbound), surface.traits.command_prefix
        visible = [s for s in self.registry.get_tool_summaries(ctx) if s["name"] not in HIDDEN]
        if command.name == "tools":
            message = cards.tools_message(visible, prefix)
        elif command.name == "start":
            message = start_message(self.name(), prefix, visible, ctx)
        else:
            message = help_message(self.name(), prefix, visible)
        await privately(surface, inbound, message)
        return True


class ToolCommands:
    """``/tool arguments``: the tool through the pipeline; an unknown command or wrong arguments get a hint."""

    def __init__(self, registry: ToolRegistry, run_tool: RunTool, context_for: ContextFor) -> None:
        self.registry = registry
        self.run_tool = run_tool
        self.context_for = context_for

    def check(self, inbound: Inbound, surface: Surface) -> bool:
        return command_of(inbound, surface) is not None

    async def handle(self, inbound: Inbound, surface: Surface) -> bool:
        command = command_of(inbound, surface)
        assert command is not None
        p = surface.traits.command_prefix
        definition = self.registry.get(command.name)
        if definition is None:
            close = difflib.get_close_matches(command.name, [t.name for t in self.registry], n=2)
            hint = f" Did you mean {', '.join(p + c for c in close)}?" if close else ""
            await privately(
                surface,
                inbound,
                cards.text(f"Unknown command {p}{command.name}.{hint} Send {p}tools to see what you can use."),
            )
            return True
        try:
            args = parse_arguments(command.rest, definition.input_schema)
        except CommandError as exc:
            usage = cards.usage(definition.name, definition.input_schema, p)
            await privately(surface, inbound, cards.text(f"{p}{command.name}: {exc}.\nUsage: {usage}"))
            return True
        await self.run_tool(inbound, surface, definition.name, args, self.context_for(inbound))
        return True


class AgentText:
    """Free text: the agent when one is configured (``agent()`` gives it), else how to write commands.

    ``respond(inbound, surface)``: how the agent's answer is shown (the assistant's: streamed where the
    surface can, with feedback buttons when asked); by default it is sent when the agent is done."""

    def __init__(
        self,
        agent: Callable[[], Agent | None],
        context_for: ContextFor,
        respond: Callable[[Inbound, Surface], Awaitable[None]] | None = None,
    ) -> None:
        self.agent = agent
        self.context_for = context_for
        self.respond = respond

    def check(self, inbound: Inbound, surface: Surface) -> bool:
        return inbound.kind == "text"

    async def handle(self, inbound: Inbound, surface: Surface) -> bool:
        agent = self.agent()
        if agent is None:
            p = surface.traits.command_prefix
            await privately(
                surface,
                inbound,
                cards.text(
                    f"I work with commands. Send {p}tools to see what you can do, or {p}help for how to write them."
                ),
            )
            return True
        if self.respond is not None:
            await self.respond(inbound, surface)
            return True
        await surface.typing(inbound.chat_id)
        reply = await agent(inbound, self.context_for(inbound))
        if reply is not None:
            await surface.send(inbound.chat_id, cards.text(reply) if isinstance(reply, str) else reply)
        return True

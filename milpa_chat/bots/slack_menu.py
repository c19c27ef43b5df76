"""``/milpa help`` and ``/milpa tools`` on Slack: the subcommands projected from the registry for one person.

The listing comes from :class:`~milpa_chat.command.SlackSubcommandProjector` — the same reading of
the catalogue as the Telegram menu, the CLI and the notebook explorer: the tools the person's scopes
may call, each with its usage from the input schema (``/milpa delete_note <note_id: integer>``).

:class:`MenuCommands` answers them as the first of the assistant's routes, so a command is de-duplicated like
every other delivery (``Assistant.handle``): Slack's retries of a slow ``/milpa tools`` (the same
``trigger_id``, with ``X-Slack-Retry-Num``) are answered once, by whichever worker saw it first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from milpa_chat.renderers.model import Block, Heading, ItemList, Message, Note, Paragraph, Span

if TYPE_CHECKING:
    from collections.abc import Callable

    from milpa_chat.bots.slack_transport import SlackTransport
    from milpa_chat.chat.assistant import Assistant
    from milpa_chat.chat.inbound import Inbound
    from milpa_chat.chat.surface import Surface
    from milpa_chat.command.projectors import SlackSubcommand, SlackSubcommandProjector
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.registry import ToolRegistry

__all__ = ["MENU_COMMANDS", "MenuCommands", "menu_message", "subcommands"]

#: The chat commands this module answers on Slack (``/milpa`` alone is ``help``).
MENU_COMMANDS = frozenset({"/help", "/tools", "/start"})
NONE_AVAILABLE = "You have no tools available. Ask an administrator for access."


def subcommands(projector: SlackSubcommandProjector, registry: ToolRegistry, ctx: ToolContext) -> list[SlackSubcommand]:
    """The subcommands ``ctx`` may call."""
    return projector.catalogue(registry, ctx)


def _listing(found: list[SlackSubcommand]) -> ItemList:
    return ItemList(tuple(f"{s.usage} — {s.description}" if s.description else s.usage for s in found))


def menu_message(
    name: str,
    command: str,
    found: list[SlackSubcommand],
    *,
    tools_only: bool = False,
    examples: tuple[str, ...] = (),
    who: str | None = None,
) -> Message:
    """``/milpa tools`` (``tools_only``): the subcommands; ``/milpa help``: how to write them (``examples``, built
    from the person's own tools), and the subcommands; ``who``: who the person is (``/milpa start``)."""
    p = f"{command} "
    if tools_only:
        if not found:
            return Message((Paragraph.of(NONE_AVAILABLE),), NONE_AVAILABLE)
        return Message((Heading("Your tools", "🧰"), _listing(found)), f"{len(found)} tools available")
    blocks: list[Block] = [
        Heading(name, "🤖"),
        *([Paragraph.of(who)] if who else []),
        Paragraph.of(
            "Every tool is a subcommand of ",
            Span(command, "code"),
            ". Send ",
            Span(f"{p}tools", "code"),
            " for this list alone.",
        ),
        _listing(found) if found else Paragraph.of(NONE_AVAILABLE),
        ItemList(
            examples
            or (
                f'{p}<subcommand> 5 "two words" — values in parameter order',
                f'{p}<subcommand> name="two words" page=2 — named values',
                f'{p}<subcommand> {{"name": "two words"}} — a JSON object',
            )
        ),
        Note(
            "<…> is required, […] optional (with its default). Actions that change things ask you to confirm; "
            "some need an approver."
        ),
    ]
    return Message(tuple(blocks), f"{name}: {len(found)} subcommands; send {p}tools to list them")


class MenuCommands:
    """The route of ``/milpa help`` (and ``/milpa`` alone), ``/milpa start`` and ``/milpa tools`` on
    ``transport``'s surface: the person's subcommands (from ``projector()``), shown to them alone."""

    def __init__(
        self,
        assistant: Assistant,
        transport: SlackTransport,
        command: str,
        projector: Callable[[], SlackSubcommandProjector],
    ) -> None:
        self.assistant, self.transport, self.command, self.projector = assistant, transport, command, projector

    def check(self, inbound: Inbound, surface: Surface) -> bool:
        head = (inbound.text or "").split(maxsplit=1)
        return inbound.kind == "command" and surface is self.transport and bool(head) and head[0] in MENU_COMMANDS

    async def handle(self, inbound: Inbound, surface: Surface) -> bool:
        from milpa_chat.chat.replies import examples, identity_line

        assistant = self.assistant
        head = (inbound.text or "").split(maxsplit=1)[0]
        ctx = assistant.context_for(inbound)
        found = subcommands(self.projector(), assistant.registry, ctx)
        names = {s.name for s in found}
        own = [s for s in assistant.registry.get_tool_summaries(ctx) if s["name"] in names]
        message = menu_message(
            assistant.name,
            self.command,
            found,
            tools_only=head == "/tools",
            examples=examples(own, f"{self.command} "),
            who=identity_line(ctx) if head == "/start" else None,
        )
        await self.transport.whisper(inbound, message)
        return True

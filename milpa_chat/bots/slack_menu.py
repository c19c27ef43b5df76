"""``/milpa help`` and ``/milpa tools`` on Slack: the subcommands projected from the registry for one person.

The listing comes from :class:`~milpa_chat.command.SlackSubcommandProjector` — the same reading of
the catalogue as the Telegram menu, the CLI and the notebook explorer: the tools the person's scopes
may call, each with its usage from the input schema (``/milpa delete_note <note_id: integer>``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from milpa_chat.renderers.model import Block, Heading, ItemList, Message, Note, Paragraph, Span

if TYPE_CHECKING:
    from milpa_chat.command.projectors import SlackSubcommand, SlackSubcommandProjector
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.registry import ToolRegistry

__all__ = ["MENU_COMMANDS", "menu_message", "subcommands"]

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

"""``Route``: one kind of inbound event the assistant handles, as a pure check and an effectful handler.

Following python-telegram-bot's split of ``check_update`` and ``handle_update``: :meth:`Route.check`
looks at the event (and the surface's declared traits) and says whether it is this route's, without
awaiting or writing anything; :meth:`Route.handle` does the work. ``Assistant.handle`` asks its routes in
order and the first whose check says yes handles the event. A route whose answer needs the store (a
reply is the answer to a prompt only when a prompt waits) says so by returning ``False`` from
``handle``: the next routes are asked then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from milpa_chat.chat.commands import CommandError, ParsedCommand, parse_command

if TYPE_CHECKING:
    from milpa_chat.chat.inbound import Inbound
    from milpa_chat.chat.surface import Surface

__all__ = ["Route", "command_of"]


class Route(Protocol):
    """One kind of event: ``check`` (pure) and ``handle`` (``False``: not this route's after all)."""

    def check(self, inbound: Inbound, surface: Surface) -> bool: ...

    async def handle(self, inbound: Inbound, surface: Surface) -> bool: ...


def command_of(inbound: Inbound, surface: Surface) -> ParsedCommand | None:
    """The command ``inbound`` carries, or ``None`` (not a command, or addressed to another bot in a group)."""
    if inbound.kind != "command" or inbound.text is None:
        return None
    try:
        return parse_command(inbound.text, surface.traits.bot_username)
    except CommandError:
        return None

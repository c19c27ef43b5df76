"""Web: an HTML fragment for the playground (style it with the ``milpa-*`` classes).

Buttons are ``<button type="button" data-action=… data-ref=…>``; the page posts the pair
back and the server decides who tapped from its own session, never from the button.
"""

from __future__ import annotations

from typing import ClassVar

from milpa_chat.renderers._build import Limits
from milpa_chat.renderers._html import message_html
from milpa_chat.renderers.base import MessageRenderer
from milpa_chat.renderers.model import Message

__all__ = ["WebRenderer"]


class WebRenderer(MessageRenderer[str]):
    """Renders for the ``web`` channel: one ``<div class="milpa …">`` fragment."""

    channels: ClassVar[tuple[str, ...]] = ("web",)
    default_limits: ClassVar[Limits] = Limits(value_chars=2000, text_chars=5000, cell_chars=120, items=500)

    def render_message(self, message: Message) -> str:
        note = "Shortened for display." if message.truncated else None
        return message_html(message, buttons=True, note=note)

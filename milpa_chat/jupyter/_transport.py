"""The ``jupyter`` surface as the chat core sees it: the inbox's side of ``Transport``.

The core answers a decision (``answer``) and may post messages to a notebook user (``send`` /
``edit``: the card and the result of a request the notebook user made). The inbox shows the answer
beside the approval it is about; the messages are kept in ``inbox.transport.messages``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from milpa_chat.chat.inbound import Inbound, MessageRef
from milpa_chat.chat.surface import Surface

if TYPE_CHECKING:
    from milpa_chat.renderers.model import Message

__all__ = ["NotebookMessage", "NotebookTransport"]


@dataclass
class NotebookMessage:
    """A message the core sent to a notebook chat, as it currently reads."""

    chat_id: str
    message_id: str
    message: Message
    edits: list[Message] = field(default_factory=list)


class NotebookTransport(Surface):
    """The :class:`~milpa_chat.chat.Surface` of the notebook inbox (surface ``jupyter``)."""

    surface = "jupyter"

    def __init__(self, on_change: Callable[[], None] = lambda: None) -> None:
        self.answers: dict[str, str] = {}
        self.messages: list[NotebookMessage] = []
        self._ids = itertools.count(1)
        self._on_change = on_change

    async def send(self, chat_id: str, message: Message) -> MessageRef:
        sent = NotebookMessage(chat_id, f"nb-{next(self._ids)}", message)
        self.messages.append(sent)
        self._on_change()
        return MessageRef(self.surface, chat_id, sent.message_id)

    async def edit(self, ref: MessageRef, message: Message) -> None:
        for sent in self.messages:
            if sent.message_id == ref.message_id and sent.message != message:
                sent.edits.append(sent.message)
                sent.message = message
                self._on_change()

    async def answer(self, inbound: Inbound, text: str, *, alert: bool = False) -> None:
        """Keep the answer under the approval id it is about (``inbound.ref``)."""
        self.answers[inbound.ref or ""] = text
        self._on_change()

    async def typing(self, chat_id: str) -> None:
        return None

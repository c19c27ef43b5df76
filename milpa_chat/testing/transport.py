"""``RecordingTransport``: a chat surface in memory, to test an ``Assistant`` without any platform.

It keeps every message the assistant sent or edited (as the channel-neutral ``Message`` and as
rendered CLI text), every short answer and typing indicator, and lets a test act as users::

    surface = RecordingTransport("telegram")
    assistant.attach(surface)
    await surface.say(assistant, alice, "/delete_note 5")
    card = surface.last("chat-1")
    await surface.tap(assistant, alice, card, "Confirm")
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from milpa_chat.chat.inbound import ChatUser, Inbound, MessageRef
from milpa_chat.chat.surface import Surface

if TYPE_CHECKING:
    from milpa_chat.chat.assistant import Assistant
    from milpa_chat.renderers.model import Button, Message

__all__ = ["Answer", "RecordedMessage", "RecordingTransport"]


@dataclass
class RecordedMessage:
    """One message as the user currently sees it, with its edit history."""

    chat_id: str
    message_id: str
    message: Message
    history: list[Message] = field(default_factory=list)

    @property
    def text(self) -> str:
        """Every piece of text the message shows, one block per line (button labels included)."""
        return plain_text(self.message)

    @property
    def buttons(self) -> tuple[Button, ...]:
        return self.message.buttons

    def button(self, label: str) -> Button:
        for b in self.buttons:
            if b.label == label or label.lower() in b.label.lower():
                return b
        raise LookupError(
            f"no button {label!r} on message {self.message_id}; buttons: {[b.label for b in self.buttons]}"
        )


def plain_text(message: Message) -> str:
    from milpa_chat.renderers import model as m

    lines: list[str] = []
    for block in message.blocks:
        if isinstance(block, m.Heading):
            lines.append(f"{block.icon} {block.text}".strip())
        elif isinstance(block, m.Paragraph):
            lines.append(block.text)
        elif isinstance(block, m.Fields):
            lines += [f"{k}: {v}" for k, v in block.items]
        elif isinstance(block, m.ItemList):
            lines += [f"- {i}" for i in block.items]
        elif isinstance(block, m.Table):
            lines += [" | ".join(row) for row in block.rows]
        elif isinstance(block, m.Code | m.Note):
            lines.append(block.text)
        elif isinstance(block, m.Actions):
            lines.append(" ".join(f"[{b.label}]" for row in block.rows for b in row))
    return "\n".join(lines)


@dataclass(frozen=True)
class Answer:
    """A short reply to a tap, shown only to the actor."""

    user_id: str
    text: str
    alert: bool


class RecordingTransport(Surface):
    """An in-memory :class:`~milpa_chat.chat.Surface` for ``surface`` (no optional powers: a subclass sets
    ``_traits`` and overrides the methods of the powers it adds)."""

    def __init__(self, surface: str = "test") -> None:
        self.surface = surface
        self.messages: dict[str, list[RecordedMessage]] = {}
        self._by_id: dict[
            tuple[str, str], RecordedMessage
        ] = {}  # (chat, message id): an edit finds its message at once
        self.answers: list[Answer] = []
        self.typing_chats: list[str] = []
        self.not_modified = 0
        self._ids = itertools.count(1)
        self._deliveries = itertools.count(1)

    # ------------------------------------------------------------- Transport
    async def send(self, chat_id: str, message: Message) -> MessageRef:
        rec = RecordedMessage(chat_id, str(next(self._ids)), message)
        self.messages.setdefault(chat_id, []).append(rec)
        self._by_id[(chat_id, rec.message_id)] = rec
        return MessageRef(self.surface, chat_id, rec.message_id)

    async def edit(self, ref: MessageRef, message: Message) -> None:
        rec = self.find(ref.chat_id, ref.message_id)
        if rec.message == message:
            self.not_modified += 1
            return
        rec.history.append(rec.message)
        rec.message = message

    async def answer(self, inbound: Inbound, text: str, *, alert: bool = False) -> None:
        self.answers.append(Answer(inbound.user.id, text, alert))

    async def typing(self, chat_id: str) -> None:
        self.typing_chats.append(chat_id)

    # ------------------------------------------------------------- reading
    def find(self, chat_id: str, message_id: str) -> RecordedMessage:
        rec = self._by_id.get((chat_id, message_id))
        if rec is not None:
            return rec
        for rec in self.messages.get(chat_id, []):  # a message list edited by hand
            if rec.message_id == message_id:
                return rec
        raise LookupError(f"no message {message_id} in chat {chat_id}")

    def in_chat(self, chat_id: str) -> list[RecordedMessage]:
        return list(self.messages.get(chat_id, []))

    def last(self, chat_id: str) -> RecordedMessage:
        msgs = self.messages.get(chat_id)
        if not msgs:
            raise LookupError(f"nothing was sent to chat {chat_id}")
        return msgs[-1]

    def answers_to(self, user: ChatUser) -> list[str]:
        return [a.text for a in self.answers if a.user_id == user.id]

    # -------------------------------------------------------------- acting
    def inbound(self, user: ChatUser, chat_id: str, **fields: Any) -> Inbound:
        fields.setdefault("delivery_id", f"d{next(self._deliveries)}")
        return Inbound(self.surface, chat_id, user, **fields)

    async def say(self, assistant: Assistant, user: ChatUser, text: str, chat_id: str | None = None) -> None:
        await assistant.handle(self.inbound(user, chat_id or user.id, text=text), self)

    async def tap(
        self,
        assistant: Assistant,
        user: ChatUser,
        message: RecordedMessage,
        label: str,
        *,
        delivery_id: str | None = None,
    ) -> None:
        button = message.button(label)
        extra = {"delivery_id": delivery_id} if delivery_id else {}
        inbound = self.inbound(
            user,
            message.chat_id,
            action=button.action,
            ref=button.ref,
            message_id=message.message_id,
            buttons=tuple(b.callback_data for b in message.buttons),
            **extra,
        )
        await assistant.handle(inbound, self)

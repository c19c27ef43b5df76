"""What the local Bot API server keeps: users, chats, messages, button taps, calls, updates.

Every record here is plain data a test can read (``server.messages(chat_id)``,
``server.calls``, ``server.callback_queries``...). ``to_dict()`` gives the Bot API JSON object.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "TelegramApiCall",
    "TelegramCallbackQuery",
    "TelegramChat",
    "TelegramChatAction",
    "TelegramDraft",
    "TelegramFile",
    "TelegramMessage",
    "TelegramMessageVersion",
    "TelegramUpdate",
    "TelegramUser",
    "TelegramWebhookDelivery",
]

ChatType = Literal["private", "group", "supergroup", "channel"]


@dataclass(frozen=True)
class TelegramUser:
    """A Telegram user (or bot). ``TelegramUser(42, "Alice", "alice")``."""

    id: int
    first_name: str
    username: str | None = None
    last_name: str | None = None
    is_bot: bool = False
    language_code: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "is_bot": self.is_bot, "first_name": self.first_name}
        for key in ("last_name", "username", "language_code"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        return data


@dataclass(frozen=True)
class TelegramChat:
    """A chat. Build one with :meth:`private` or :meth:`group`."""

    id: int
    type: ChatType
    title: str | None = None
    username: str | None = None
    first_name: str | None = None
    last_name: str | None = None

    @classmethod
    def private(cls, user: TelegramUser) -> TelegramChat:
        """The private chat between ``user`` and the bot (its id is the user's id)."""
        return cls(user.id, "private", None, user.username, user.first_name, user.last_name)

    @classmethod
    def group(cls, chat_id: int, title: str, *, supergroup: bool = False, username: str | None = None) -> TelegramChat:
        """A group (negative id, e.g. ``-1001``); ``supergroup=True`` for a supergroup."""
        if chat_id >= 0:
            raise ValueError(f"group chat ids are negative in Telegram, got {chat_id}")
        return cls(chat_id, "supergroup" if supergroup else "group", title, username)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "type": self.type}
        for key in ("title", "username", "first_name", "last_name"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        return data


@dataclass(frozen=True)
class TelegramMessageVersion:
    """One state of a message: the text as shown, its entities, its inline keyboard."""

    text: str | None
    entities: tuple[dict[str, Any], ...]
    reply_markup: dict[str, Any] | None
    source: str | None  # the text as the bot sent it (before HTML parsing)
    parse_mode: str | None
    at: float  # time.monotonic()

    def content_key(self) -> str:
        """What Telegram compares to decide "message is not modified"."""
        return json.dumps([self.text, list(self.entities), self.reply_markup], sort_keys=True)


@dataclass
class TelegramFile:
    """A file the bot uploaded (``sendDocument``); downloadable under ``server.base_file_url``."""

    file_id: str
    file_unique_id: str
    file_name: str | None
    mime_type: str | None
    content: bytes
    file_path: str

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "file_id": self.file_id,
            "file_unique_id": self.file_unique_id,
            "file_size": len(self.content),
        }
        if self.file_name is not None:
            data["file_name"] = self.file_name
        if self.mime_type is not None:
            data["mime_type"] = self.mime_type
        return data


@dataclass
class TelegramMessage:
    """A message in a chat, sent by the bot or by a simulated user, with its edit history."""

    chat: TelegramChat
    message_id: int
    sender: TelegramUser
    date: int
    versions: list[TelegramMessageVersion]
    document: TelegramFile | None = None
    reply_to_message_id: int | None = None
    deleted: bool = False
    edit_date: int | None = None

    @property
    def current(self) -> TelegramMessageVersion:
        return self.versions[-1]

    @property
    def text(self) -> str | None:
        """The text (or caption) as users see it, after entity parsing."""
        return self.current.text

    @property
    def entities(self) -> list[dict[str, Any]]:
        return list(self.current.entities)

    @property
    def reply_markup(self) -> dict[str, Any] | None:
        return self.current.reply_markup

    @property
    def from_bot(self) -> bool:
        return self.sender.is_bot

    @property
    def edits(self) -> list[TelegramMessageVersion]:
        """Every version after the first, oldest first."""
        return self.versions[1:]

    @property
    def buttons(self) -> list[list[dict[str, Any]]]:
        """The inline keyboard's rows of buttons (``[]`` when there is none)."""
        markup = self.reply_markup or {}
        rows: list[list[dict[str, Any]]] = markup.get("inline_keyboard", [])
        return rows

    @property
    def button_labels(self) -> list[str]:
        return [str(button["text"]) for row in self.buttons for button in row]

    def button(self, label: str) -> dict[str, Any]:
        """The button whose text is ``label``; ``LookupError`` when there is none."""
        for row in self.buttons:
            for button in row:
                if button.get("text") == label:
                    return button
        raise LookupError(f"message {self.message_id} has no button {label!r}; it has {self.button_labels}")

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "message_id": self.message_id,
            "from": self.sender.to_dict(),
            "chat": self.chat.to_dict(),
            "date": self.date,
        }
        key = "caption" if self.document is not None else "text"
        if self.text is not None:
            data[key] = self.text
            if self.entities:
                data[f"{key}_entities" if key == "caption" else "entities"] = self.entities
        if self.document is not None:
            data["document"] = self.document.to_dict()
        if self.reply_markup is not None:
            data["reply_markup"] = self.reply_markup
        if self.edit_date is not None:
            data["edit_date"] = self.edit_date
        return data


@dataclass
class TelegramCallbackQuery:
    """A button tap and how (and how fast) the bot answered it."""

    id: str
    update_id: int
    user: TelegramUser
    chat_id: int
    message_id: int
    data: str
    created_at: float  # time.monotonic() when the update was created
    answered_at: float | None = None
    answer_text: str | None = None
    show_alert: bool = False
    url: str | None = None
    answer_attempts: int = 0

    @property
    def answered(self) -> bool:
        return self.answered_at is not None

    @property
    def answer_latency(self) -> float | None:
        """Seconds from the tap (the update's creation) to the bot's answer."""
        return None if self.answered_at is None else self.answered_at - self.created_at


@dataclass(frozen=True)
class TelegramChatAction:
    """A ``sendChatAction`` call ("typing"...)."""

    chat_id: int
    action: str
    at: float


@dataclass(frozen=True)
class TelegramDraft:
    """One ``sendMessageDraft`` update: the text a private chat showed as the draft ``draft_id`` (empty: the
    "Thinking…" placeholder), with its entities, in the order the bot sent them."""

    chat_id: int
    draft_id: int
    text: str
    entities: tuple[dict[str, Any], ...]
    at: float


@dataclass
class TelegramApiCall:
    """One request the bot made: method, parameters as sent (strings), files, and the outcome."""

    method: str
    params: dict[str, str]
    files: dict[str, tuple[str | None, bytes]]
    at: float  # time.monotonic()
    status: int = 0
    result: Any = None
    error: str | None = None

    def json(self, name: str) -> Any:
        """A JSON-encoded parameter (``reply_markup``, ``entities``...) decoded, or None."""
        value = self.params.get(name)
        return None if value is None else json.loads(value)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


@dataclass
class TelegramWebhookDelivery:
    """One POST of an update to the bot's webhook."""

    update_id: int
    url: str
    secret_token: str | None
    status: int | None  # None when the connection failed
    error: str | None
    at: float = field(default_factory=time.monotonic)


@dataclass
class TelegramUpdate:
    """An update the server created; ``payload`` is the JSON the bot receives."""

    update_id: int
    payload: dict[str, Any]
    created_at: float
    call_index: int  # len(server.calls) when it was created: ``wait_for(..., since=update)``
    deliveries: list[TelegramWebhookDelivery] = field(default_factory=list)
    redelivery: bool = False
    handed_out: bool = False

    @property
    def kind(self) -> str:
        """``"message"``, ``"callback_query"``..."""
        return next(key for key in self.payload if key != "update_id")

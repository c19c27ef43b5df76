"""Normalized inbound events and where a message lives (the surface they come through: :mod:`.surface`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["ChatUser", "Inbound", "MessageRef"]


@dataclass(frozen=True, slots=True)
class ChatUser:
    """The person behind an event, as the platform authenticated them (Telegram ``from``, Slack ``user``)."""

    id: str
    name: str = ""
    username: str | None = None
    team: str | None = None

    @property
    def display(self) -> str:
        if self.name:
            return self.name
        return f"@{self.username}" if self.username else self.id


@dataclass(frozen=True, slots=True)
class Inbound:
    """One thing a user did: sent ``text`` (a command when it starts with ``/``) or tapped a button
    (``action`` + ``ref``). ``delivery_id`` (Telegram update id, Slack event id) deduplicates
    redeliveries. ``message_id`` is the message that carried the tapped button. ``note`` is a reason
    the actor gave with a decision (shown on the decided card and kept by the verifier).

    ``buttons`` is the data (``"<action>:<ref>"``) of every button of the tapped message as the platform
    reported it with the tap (Telegram ``callback_query.message.reply_markup``, Slack ``message.blocks``),
    ``()`` for a message without buttons, and ``None`` when the platform did not report the message (a
    Telegram message too old to carry it, an ephemeral Slack message, a surface without messages). A tap
    whose data is not among them was not made on that message (:attr:`offered` is ``False``).

    ``thread`` is the thread an answer belongs in, where the platform has threads (Slack: the message's
    ``thread_ts``, or its own ``ts`` to start one); ``None`` elsewhere."""

    surface: str
    chat_id: str
    user: ChatUser
    text: str | None = None
    action: str | None = None
    ref: str | None = None
    delivery_id: str | None = None
    message_id: str | None = None
    chat_type: str = "private"
    note: str | None = None
    buttons: tuple[str, ...] | None = None
    thread: str | None = None
    raw: Any = field(default=None, compare=False, repr=False)

    @property
    def kind(self) -> Literal["action", "command", "text"]:
        if self.action is not None:
            return "action"
        if self.text is not None and self.text.startswith("/"):
            return "command"
        return "text"

    @property
    def offered(self) -> bool | None:
        """Whether the tapped button is one the tapped message shows: ``None`` when the platform did not
        report the message's buttons (or this is no tap)."""
        if self.action is None or self.buttons is None:
            return None
        return f"{self.action}:{self.ref or ''}" in self.buttons

    def shows(self, approval_id: str) -> bool:
        """Whether a button of the tapped message, as the platform reported it, names ``approval_id`` (its
        ref is the id, or ``<id>.<revision>``); ``False`` when the platform did not report the buttons."""
        return any(data.partition(":")[2].partition(".")[0] == approval_id for data in self.buttons or ())


@dataclass(frozen=True, slots=True)
class MessageRef:
    """Where a message lives, so it can be edited later (also after a restart)."""

    surface: str
    chat_id: str
    message_id: str

    def to_dict(self) -> dict[str, str]:
        return {"surface": self.surface, "chat_id": self.chat_id, "message_id": self.message_id}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MessageRef:
        return cls(str(d["surface"]), str(d["chat_id"]), str(d["message_id"]))

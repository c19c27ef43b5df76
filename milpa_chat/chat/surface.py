"""``Surface``: the declared seam between the chat core and a platform (Telegram, Slack, a notebook, a test).

A surface implements four duties (``send``, ``edit``, ``answer``, ``typing``) and says which optional
powers it has in its frozen :class:`Traits`; each power is a method of this base with a no-op default,
so the core calls it only where the traits say so and mypy checks every call. A surface that learns a
trait late (Telegram's bot username, after ``getMe``) answers :attr:`Surface.traits` with it once known.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from milpa_chat.chat.inbound import Inbound, MessageRef
from milpa_chat.renderers.model import Message

if TYPE_CHECKING:
    from milpa_chat.chat.streaming import Stream
    from milpa_chat.runtime.approval import Approval

__all__ = ["EditField", "Surface", "Traits", "Transport"]


@dataclass(frozen=True, slots=True)
class EditField:
    """One argument a person may change: its name, label, help, whether it may be left empty, its
    current value as text (what a form is prefilled with) and its schema."""

    name: str
    label: str
    hint: str
    optional: bool
    now: str
    schema: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Traits:
    """What a surface can do beyond the four duties, and how people write to it.

    ``command_prefix``: how users type a command (``"/"``; a Slack slash command gives ``"/milpa "``).
    ``bot_username``: commands addressed to another bot in a group (``/cmd@otherbot``) are ignored.
    ``whispers``: it can show a message to one person only (:meth:`Surface.whisper`). ``prompts``: it can
    ask for a typed reply to a message (:meth:`Surface.prompt`). ``edit_forms`` / ``reason_forms``: it opens
    a form to edit a request's arguments / to give a reason (:meth:`Surface.open_edit_form`,
    :meth:`Surface.open_reason_form`). ``reports_failures``: it has a last way to tell a person that their
    request failed (:meth:`Surface.report_failure`). ``streams``: it shows an answer while it is produced,
    with the steps of its plan (:meth:`Surface.open_stream`).
    """

    command_prefix: str = "/"
    bot_username: str | None = None
    whispers: bool = False
    prompts: bool = False
    edit_forms: bool = False
    reason_forms: bool = False
    reports_failures: bool = False
    streams: bool = False


class Surface(ABC):
    """What the chat core needs from a platform. Implementations render ``Message`` themselves."""

    surface: str = "unknown"
    #: What :attr:`traits` answers; a surface sets its own in ``__init__``.
    _traits: Traits = Traits()

    @property
    def traits(self) -> Traits:
        """This surface's optional powers and how people write to it."""
        return self._traits

    @abstractmethod
    async def send(self, chat_id: str, message: Message) -> MessageRef:
        """Post a message; returns where it lives."""

    @abstractmethod
    async def edit(self, ref: MessageRef, message: Message) -> None:
        """Replace a message in place. "Not modified" counts as success."""

    @abstractmethod
    async def answer(self, inbound: Inbound, text: str, *, alert: bool = False) -> None:
        """A short reply only the actor sees (Telegram callback answer, Slack ephemeral)."""

    async def typing(self, chat_id: str) -> None:
        """Show that work is in progress (nothing, where the platform has no such signal)."""
        return None

    # ------------------------------------------------------------ optional powers (see ``traits``)
    async def whisper(self, inbound: Inbound, message: Message) -> None:
        """Show ``message`` to the actor alone (``traits.whispers``)."""
        return None

    async def prompt(self, inbound: Inbound, text: str) -> MessageRef | None:
        """Ask the actor for a typed reply to ``text`` (``traits.prompts``); where it went."""
        return None

    async def open_edit_form(self, inbound: Inbound, approval: Approval, fields: Sequence[EditField]) -> None:
        """Open a form to edit ``approval``'s ``fields`` (``traits.edit_forms``)."""
        return None

    async def open_reason_form(self, inbound: Inbound, approval: Approval, why: str) -> None:
        """Open a form asking why the actor approves a high-risk ``approval`` (``traits.reason_forms``)."""
        return None

    async def open_stream(self, inbound: Inbound) -> Stream | None:
        """A :class:`~milpa_chat.chat.streaming.Stream` answering ``inbound`` where it was written (its chat,
        its thread), or ``None`` where no stream can be shown there (``traits.streams``)."""
        return None

    async def report_failure(self, inbound: Inbound, exc: BaseException) -> bool:
        """Tell the actor that handling ``inbound`` failed, by the surface's last way (``traits.reports_failures``);
        whether it did."""
        return False


#: The name the seam had before it was a declared base.
Transport = Surface

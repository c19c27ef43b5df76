"""The renderer protocol and the base class the built-in renderers share."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from milpa_chat.renderers._build import Limits
from milpa_chat.renderers.approval import ApprovalView, compose_approval
from milpa_chat.renderers.compose import compose_result
from milpa_chat.renderers.model import Message
from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.result import ToolResult

__all__ = ["ChannelRenderer", "MessageRenderer"]

P = TypeVar("P")
P_co = TypeVar("P_co", covariant=True)


@runtime_checkable
class ChannelRenderer(Protocol[P_co]):
    """Turns a result (or an approval card, or a composed message) into one channel's payload."""

    def supports(self, channel: str) -> bool:
        """True when this renderer serves ``channel`` (``ToolContext.channel``)."""
        ...

    def render(self, result: ToolResult, ctx: ToolContext | None = None) -> P_co:
        """The payload showing ``result`` to the caller described by ``ctx``."""
        ...


class MessageRenderer(ABC, Generic[P]):
    """Composes results and approval cards into a :class:`Message`, then emits the channel payload.

    ``channels`` replaces the channels served; ``limits`` how much is shown before shortening;
    ``redact`` (default on) hides the values of secret-named keys in result data.
    """

    channels: ClassVar[tuple[str, ...]] = ()
    default_limits: ClassVar[Limits] = Limits()

    def __init__(
        self, *, channels: Iterable[str] | None = None, limits: Limits | None = None, redact: bool = True
    ) -> None:
        self.served: frozenset[str] = frozenset(self.channels if channels is None else channels)
        self.limits = limits or self.default_limits
        self.redact = redact
        #: The last message rendered and its payload (see :meth:`_remembered`).
        self._last: tuple[Message, P] | None = None

    def supports(self, channel: str) -> bool:
        return channel in self.served

    def render(self, result: ToolResult, ctx: ToolContext | None = None) -> P:
        return self.render_message(compose_result(result, limits=self.limits, redact=self.redact))

    def render_approval(self, view: ApprovalView) -> P:
        """The approval card for ``view`` (arguments are always redacted)."""
        return self.render_message(compose_approval(view, limits=self.limits))

    @abstractmethod
    def render_message(self, message: Message) -> P:
        """The channel payload for a composed message."""

    def _remembered(self, message: Message) -> P | None:
        """The payload of ``message`` when it is the very message this renderer rendered last (every copy of a
        decided card is one message: it is rendered once for all of them). A payload is shared then: read it,
        do not change it."""
        last = getattr(self, "_last", None)  # (a subclass that did not call this class's __init__ has none)
        return last[1] if last is not None and last[0] is message else None

    def _remember(self, message: Message, payload: P) -> P:
        self._last = (message, payload)
        return payload

    def __repr__(self) -> str:
        return f"{type(self).__name__}(channels={sorted(self.served)!r})"

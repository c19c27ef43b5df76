"""``RendererRegistry``: picks the renderer for ``ToolContext.channel``.

The first added renderer whose ``supports(channel)`` is true renders; otherwise the default
renderer, if one is set; otherwise the result's JSON envelope. Without a context the
channel is ``"default"``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from milpa_chat.renderers.approval import ApprovalView
from milpa_chat.renderers.base import ChannelRenderer
from milpa_chat.renderers.envelope import JsonRenderer, envelope
from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.result import ToolResult

__all__ = ["RendererRegistry"]


class RendererRegistry:
    """Renderers in the order added, plus an optional default."""

    def __init__(
        self, renderers: Iterable[ChannelRenderer[Any]] = (), *, default: ChannelRenderer[Any] | None = None
    ) -> None:
        self._renderers: list[ChannelRenderer[Any]] = list(renderers)
        self._default = default

    @classmethod
    def standard(cls, *, redact: bool = True) -> RendererRegistry:
        """Every built-in renderer: telegram, slack, jupyter, cli/tui, web, mcp/api/json; the CLI
        text renderer is the default for any other channel. ``redact`` applies to every one of
        them, the JSON envelope included (``redact=False`` shows raw data everywhere)."""
        from milpa_chat.renderers.cli import CliRenderer
        from milpa_chat.renderers.jupyter import JupyterRenderer
        from milpa_chat.renderers.slack import SlackRenderer
        from milpa_chat.renderers.telegram import TelegramRenderer
        from milpa_chat.renderers.web import WebRenderer

        built: list[ChannelRenderer[Any]] = [
            TelegramRenderer(redact=redact),
            SlackRenderer(redact=redact),
            JupyterRenderer(redact=redact),
            CliRenderer(redact=redact),
            WebRenderer(redact=redact),
            JsonRenderer(redact=redact),
        ]
        return cls(built, default=CliRenderer(redact=redact))

    def add(self, renderer: ChannelRenderer[Any]) -> RendererRegistry:
        """Append ``renderer`` (earlier renderers win for a channel both support)."""
        self._renderers.append(renderer)
        return self

    def set_default(self, renderer: ChannelRenderer[Any] | None) -> RendererRegistry:
        """Use ``renderer`` for channels no renderer supports (``None`` falls back to JSON)."""
        self._default = renderer
        return self

    def get(self, channel: str) -> ChannelRenderer[Any] | None:
        """The first renderer supporting ``channel``, else the default (possibly ``None``)."""
        for renderer in self._renderers:
            if renderer.supports(channel):
                return renderer
        return self._default

    def has(self, channel: str) -> bool:
        """True when a renderer supports ``channel`` or a default is set."""
        return self.get(channel) is not None

    def render(self, result: ToolResult, ctx: ToolContext | None = None) -> Any:
        """The payload for ``result`` on ``ctx.channel`` (``"default"`` without a context)."""
        renderer = self.get(ctx.channel if ctx is not None else "default")
        if renderer is None:
            return envelope(result)
        return renderer.render(result, ctx)

    def render_approval(self, view: ApprovalView, channel: str) -> Any:
        """The approval card on ``channel``; a renderer without ``render_approval`` gets JSON."""
        renderer = self.get(channel)
        render = getattr(renderer, "render_approval", None)
        if render is None:
            return JsonRenderer().render_approval(view)
        return render(view)

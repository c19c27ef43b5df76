"""RendererRegistry picks a renderer by channel, then the default, then JSON."""

from __future__ import annotations

from typing import Any

from milpa_chat.renderers import (
    ChannelRenderer,
    CliRenderer,
    JsonRenderer,
    JupyterPayload,
    RendererRegistry,
    SlackPayload,
    TelegramPayload,
)
from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.result import ToolResult

from .samples import approvals

RESULT = ToolResult.success({"id": 1}, "ok")


class Fixed:
    def __init__(self, channel: str, answer: str) -> None:
        self.channel, self.answer = channel, answer

    def supports(self, channel: str) -> bool:
        return channel == self.channel

    def render(self, result: ToolResult, ctx: ToolContext | None = None) -> str:
        return self.answer


def test_the_first_supporting_renderer_wins() -> None:
    registry = RendererRegistry().add(Fixed("web", "first")).add(Fixed("web", "second"))
    assert registry.render(RESULT, ToolContext.web("u")) == "first"
    assert isinstance(registry.get("web"), Fixed) and registry.has("web") and not registry.has("cli")


def test_then_the_default_then_the_json_envelope() -> None:
    registry = RendererRegistry([Fixed("web", "web")])
    assert registry.render(RESULT, ToolContext.cli()) == RESULT.to_dict()
    assert registry.render(RESULT) == RESULT.to_dict()  # no context: channel "default"
    registry.set_default(Fixed("none", "default"))
    assert registry.render(RESULT, ToolContext.cli()) == "default" and registry.has("anything")
    assert registry.set_default(None).get("cli") is None


def test_the_standard_registry_serves_every_channel() -> None:
    registry = RendererRegistry.standard()
    assert isinstance(registry.render(RESULT, ToolContext.telegram(1, 2)), TelegramPayload)
    assert isinstance(registry.render(RESULT, ToolContext.slack("T", "U")), SlackPayload)
    assert isinstance(registry.render(RESULT, ToolContext.jupyter()), JupyterPayload)
    assert registry.render(RESULT, ToolContext.cli()).startswith("✅ ok")
    assert registry.render(RESULT, ToolContext.web("u")).startswith('<div class="milpa milpa-success">')
    assert registry.render(RESULT, ToolContext.mcp()) == RESULT.to_dict()
    assert registry.render(RESULT, ToolContext(channel="carrier-pigeon")).startswith("✅ ok")  # default: text


def test_cards_render_on_any_channel_and_fall_back_to_json() -> None:
    view = approvals()["approval_pending_confirm"]
    assert isinstance(RendererRegistry.standard().render_approval(view, "telegram"), TelegramPayload)
    fallback: Any = RendererRegistry([Fixed("web", "x")]).render_approval(view, "web")
    assert fallback["approval"]["tool"] == "delete_note"


def test_renderers_follow_the_protocol_and_take_other_channels() -> None:
    renderer = CliRenderer(channels=["cli", "ssh"])
    assert isinstance(renderer, ChannelRenderer) and isinstance(Fixed("a", "b"), ChannelRenderer)
    assert renderer.supports("ssh") and not renderer.supports("tui")
    assert repr(renderer) == "CliRenderer(channels=['cli', 'ssh'])"


def test_json_keeps_data_unless_asked_to_redact() -> None:
    secret = ToolResult.success({"token": "abc"})
    assert JsonRenderer().render(secret)["data"] == {"token": "abc"}
    assert JsonRenderer(redact=True).render(secret)["data"] == {"token": "***REDACTED***"}

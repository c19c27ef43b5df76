"""The catalogue read once and projected onto Telegram, Slack, the CLI and the explorer: who projects what."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from milpa_chat import ToolContext, ToolRegistry, tool
from milpa_chat.command import (
    CliCommandProjector,
    EffectProfile,
    ExplorerProjector,
    Operation,
    RegistryProjector,
    SlackSubcommandProjector,
    TelegramCommandProjector,
    ToolModel,
    read_catalogue,
)
from milpa_chat.runtime.verification_tool import VerificationTool


def noop(values: dict[str, Any]) -> dict[str, Any]:
    return {}


PUBLISH = Operation(
    "posts:publish",
    "Publish a post.",
    noop,
    input_schema={
        "type": "object",
        "required": ["post_id"],
        "properties": {
            "post_id": {"type": "integer", "description": "which post"},
            "channel": {"type": "string", "enum": ["web", "mail"], "default": "web"},
        },
    },
    effects=EffectProfile.read_only(),
    scopes=["posts:write"],
)
SHELL_ONLY = Operation("posts:reindex", "Rebuild the index.", noop, effects=EffectProfile.read_only(),
                       surfaces=["tools", "cli"])  # fmt: skip


class Plain:
    @tool("list_posts", "List posts", scopes=["posts:read"], mutating=False)
    def list_posts(self, page: int = 1) -> list[int]:
        return [page]

    @tool("Posts.Export", "Export posts", mutating=False)
    def export(self) -> str:
        return ""


@pytest.fixture
def registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.scan(Plain())
    RegistryProjector(registry).register(PUBLISH, SHELL_ONLY)
    VerificationTool(registry.verifier, request_scopes=["verification:request"]).register(registry)
    return registry


def test_an_operation_and_its_registered_tool_project_alike(registry: ToolRegistry) -> None:
    tool_model = ToolModel.of(registry.get("posts_publish"))  # type: ignore[arg-type]
    assert tool_model.operation == "posts.publish" and tool_model.tags == ("operation",)
    for projector in (TelegramCommandProjector(), SlackSubcommandProjector(), CliCommandProjector(),
                      ExplorerProjector()):  # fmt: skip
        assert projector.project(PUBLISH).to_dict() == projector.project(tool_model).to_dict()
        assert projector.supports(PUBLISH) and projector.supports(registry.get("posts_publish"))  # type: ignore[arg-type]


def test_each_surface_decides_what_it_projects(registry: ToolRegistry) -> None:
    every = ToolContext.cli()
    assert [m.name for m in read_catalogue(registry, every)] == [
        "list_posts",
        "Posts.Export",
        "posts_publish",
        "posts_reindex",
        "request_verification",
        "resolve_verification",
    ]
    assert [c.command for c in TelegramCommandProjector().catalogue(registry, every)] == [
        "list_posts",
        "posts_publish",
        "request_verification",
    ]  # no hidden, no Posts.Export, no shell-only
    assert [s.name for s in SlackSubcommandProjector().catalogue(registry, every)] == [
        "list_posts",
        "Posts.Export",
        "posts_publish",
        "request_verification",
    ]
    assert [c.name for c in CliCommandProjector().catalogue(registry, every)] == [
        "list_posts",
        "Posts.Export",
        "posts_publish",
        "posts_reindex",
        "request_verification",
    ]
    reader = ToolContext.telegram(chat_id=1, user_id=1, scopes=["posts:read"])
    assert [c.command for c in TelegramCommandProjector().catalogue(registry, reader)] == ["list_posts"]


def test_the_models_carry_what_each_surface_shows(caplog: pytest.LogCaptureFixture) -> None:
    slack = SlackSubcommandProjector("/blog").project(PUBLISH)
    assert slack.usage == "/blog posts_publish <post_id: integer> [channel: web|mail = web]"
    cli = CliCommandProjector().project(PUBLISH)
    post_id, channel = cli.arguments
    assert (post_id.flag, post_id.type, post_id.required, post_id.help) == ("--post-id", "integer", True, "which post")
    assert (channel.choices, channel.has_default, channel.default) == (("web", "mail"), True, "web")
    telegram = TelegramCommandProjector()
    long = Operation("notes:x", "word " * 100, noop, effects=EffectProfile.read_only())
    shortened = telegram.project(long).description
    assert len(shortened) <= 256 and shortened.endswith("word…")
    many = ToolRegistry()
    for i in range(120):
        many.register(f"t{i}", f"Tool {i}", {"type": "object", "properties": {}}, lambda a, c: None)
    with caplog.at_level(logging.WARNING, logger="milpa_chat.command"):
        menu = telegram.menu(many)
    assert len(menu) == 100 and [c.command for c in menu[:3]] == ["tools", "help", "t0"]
    assert "left out of the menu: t98, t99" in caplog.text


def test_the_explorer_lists_what_its_projector_reads(registry: ToolRegistry) -> None:
    from milpa_chat.jupyter import ToolExplorer

    explorer = ToolExplorer(registry)
    names = [t.name for t in explorer.tools]
    assert names == [i.name for i in ExplorerProjector().catalogue(registry, explorer.context)]
    assert "posts_publish" in names and "posts_reindex" not in names  # it opted into tools and cli only
    assert "resolve_verification" in names  # the explorer hides nothing it did not hide before
    explorer.search.value = "publish"
    assert list(explorer.picker.options) == ["posts_publish"]

"""What commands print: a tool result as the CLI renderer draws it, and the options that point a hint at the
same tools and store."""

from __future__ import annotations

import shlex

from milpa_chat.cli.store import DEFAULT_TOOLS
from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.result import ToolResult

__all__ = ["render", "same_place"]


def render(result: ToolResult) -> str:
    from milpa_chat.renderers import CliRenderer

    return CliRenderer().render(result, ToolContext.cli())


def same_place(tools: str, store: str | None) -> str:
    """The options that point a later command at the same tools and store (for the hints printed)."""
    words = ([] if tools == DEFAULT_TOOLS else ["--tools", tools]) + ([] if not store else ["--store", store])
    return "".join(f" {shlex.quote(w)}" for w in words)

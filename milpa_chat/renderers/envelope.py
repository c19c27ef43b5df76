"""JSON: the 5-key envelope ``{success, data, message, error, meta}`` for MCP and APIs.

Plain JSON data (pydantic models, dates, sets, NaN and the like converted, see
:func:`milpa_chat.renderers._plain.to_plain`). Unlike the human channels, a ``JsonRenderer()``
does *not* redact result data by default (a machine caller may need what the tool returned);
``JsonRenderer(redact=True)``, which :meth:`RendererRegistry.standard` builds, applies the
redaction rule (:mod:`milpa_chat.runtime.redaction`). Approval cards are always redacted.
"""

from __future__ import annotations

from typing import Any, ClassVar

from milpa_chat.renderers._plain import to_plain
from milpa_chat.renderers._redact import hide_key, redacted_plain
from milpa_chat.renderers.approval import ApprovalView, compose_approval
from milpa_chat.renderers.base import MessageRenderer
from milpa_chat.renderers.model import Message
from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.result import ToolResult

__all__ = ["JsonRenderer", "envelope"]


def envelope(result: ToolResult, *, redact: bool = False) -> dict[str, Any]:
    """``result`` as its plain-JSON 5-key envelope."""
    plain: dict[str, Any] = to_plain(result.to_dict(), hide_key if redact else None)
    return plain


class JsonRenderer(MessageRenderer[dict[str, Any]]):
    """Renders for the ``mcp``, ``api`` and ``json`` channels."""

    channels: ClassVar[tuple[str, ...]] = ("mcp", "api", "json")

    def __init__(self, *, redact: bool = False, **options: Any) -> None:
        super().__init__(redact=redact, **options)

    def render(self, result: ToolResult, ctx: ToolContext | None = None) -> dict[str, Any]:
        return envelope(result, redact=self.redact)

    def render_approval(self, view: ApprovalView) -> dict[str, Any]:
        """``{"approval": {...fields, arguments redacted, times in ISO 8601}, "card": <message>}``."""
        message = compose_approval(view, limits=self.limits)
        fields = {name: getattr(view, name) for name in view.__slots__}
        fields["arguments"] = redacted_plain(dict(view.arguments))
        return {"approval": to_plain(fields, hide_key), "card": message.to_dict()}

    def render_message(self, message: Message) -> dict[str, Any]:
        return message.to_dict()

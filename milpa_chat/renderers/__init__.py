"""Renderers: a ``ToolResult`` or an approval card as each channel's native payload.

Two steps: a result (:func:`compose_result`) or an approval card (:func:`compose_approval`)
becomes a channel-neutral :class:`Message`; a renderer turns the message into its channel's
payload, valid by construction:

=============== ============================ ===============================================
channel         renderer                     payload
=============== ============================ ===============================================
``telegram``    :class:`TelegramRenderer`    :class:`TelegramPayload` (HTML messages + keyboard)
``slack``       :class:`SlackRenderer`       :class:`SlackPayload` (``{"text", "blocks"}``)
``jupyter``     :class:`JupyterRenderer`     :class:`JupyterPayload` (HTML + message for widgets)
``cli``/``tui`` :class:`CliRenderer`         ``str`` (plain text)
``web``         :class:`WebRenderer`         ``str`` (HTML fragment)
``mcp``/``api`` :class:`JsonRenderer`        ``dict`` (the 5-key envelope)
=============== ============================ ===============================================

No channel SDK is imported here; payloads are plain data.
"""

from milpa_chat.renderers._build import Limits
from milpa_chat.renderers._redact import REDACTED, is_secret_key, redact
from milpa_chat.renderers.approval import ApprovalKind, ApprovalState, ApprovalView, compose_approval
from milpa_chat.renderers.base import ChannelRenderer, MessageRenderer
from milpa_chat.renderers.cli import CliRenderer
from milpa_chat.renderers.compose import compose_result
from milpa_chat.renderers.envelope import JsonRenderer, envelope
from milpa_chat.renderers.jupyter import JupyterPayload, JupyterRenderer
from milpa_chat.renderers.model import (
    Actions,
    Block,
    Button,
    ButtonStyle,
    Code,
    Divider,
    Document,
    Fields,
    Heading,
    ItemList,
    LazyDocument,
    Message,
    Note,
    Paragraph,
    Span,
    Table,
    Tone,
    parse_callback_data,
)
from milpa_chat.renderers.registry import RendererRegistry
from milpa_chat.renderers.slack import SlackPayload, SlackRenderer
from milpa_chat.renderers.telegram import TelegramPayload, TelegramRenderer
from milpa_chat.renderers.web import WebRenderer

__all__ = [
    "REDACTED",
    "Actions",
    "ApprovalKind",
    "ApprovalState",
    "ApprovalView",
    "Block",
    "Button",
    "ButtonStyle",
    "ChannelRenderer",
    "CliRenderer",
    "Code",
    "Divider",
    "Document",
    "Fields",
    "Heading",
    "ItemList",
    "JsonRenderer",
    "JupyterPayload",
    "JupyterRenderer",
    "LazyDocument",
    "Limits",
    "Message",
    "MessageRenderer",
    "Note",
    "Paragraph",
    "RendererRegistry",
    "SlackPayload",
    "SlackRenderer",
    "Span",
    "Table",
    "TelegramPayload",
    "TelegramRenderer",
    "Tone",
    "WebRenderer",
    "compose_approval",
    "compose_result",
    "envelope",
    "is_secret_key",
    "parse_callback_data",
    "redact",
]

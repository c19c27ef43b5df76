"""The MCP server surface: a ``ToolRegistry`` served through the official ``mcp`` Python SDK.

``pip install "milpa-chat[mcp]"``. Importing this package needs no SDK; building an
:class:`McpServer` without it raises :class:`~milpa_chat.errors.MissingExtraError` with the install
hint. See ``docs/mcp.md``.
"""

from milpa_chat.mcp.approvals import ApprovalTools, status_of
from milpa_chat.mcp.auth import BearerTokens, McpCaller, token_digest
from milpa_chat.mcp.server import McpServer
from milpa_chat.mcp.tools import annotations_for, output_schema_for

__all__ = [
    "ApprovalTools",
    "BearerTokens",
    "McpCaller",
    "McpServer",
    "annotations_for",
    "output_schema_for",
    "status_of",
    "token_digest",
]

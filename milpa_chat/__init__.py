"""milpa-chat: Telegram and Slack assistants whose risky actions are approved by humans tapping
buttons, with the same tools and approvals in Jupyter.

The everyday names live here; channels, renderers, the LLM gateway and the store are
subpackages (``milpa_chat.bots.telegram``, ``milpa_chat.renderers``, ``milpa_chat.gateway``, ...).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from milpa_chat.errors import DeclarationError, ToolError
from milpa_chat.runtime import ErrorCode, ToolContext, ToolRegistry, ToolResult, VerifyPolicy

if TYPE_CHECKING:
    from milpa_chat.runtime.declare import Param, tool


def __getattr__(name: str) -> Any:
    if name in ("tool", "Param"):
        from milpa_chat.runtime import declare

        return getattr(declare, name)
    raise AttributeError(f"module 'milpa_chat' has no attribute {name!r}")


__all__ = [
    "DeclarationError",
    "ErrorCode",
    "Param",
    "ToolContext",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "VerifyPolicy",
    "tool",
]

__version__ = "0.1.0"

# A library leaves logging output to the application: audit lines (logger "milpa_chat.audit") and
# tool failures ("milpa_chat.registry") appear once the application configures logging.
logging.getLogger("milpa_chat").addHandler(logging.NullHandler())

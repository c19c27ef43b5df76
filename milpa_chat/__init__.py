"""milpa-chat: Telegram and Slack assistants whose risky actions are approved by humans tapping
buttons, with the same tools and approvals in Jupyter.

The everyday names live here; channels, renderers, the LLM gateway and the store are
subpackages (``milpa_chat.bots.telegram``, ``milpa_chat.renderers``, ``milpa_chat.gateway``, ...).
"""

from __future__ import annotations

import logging
from importlib import import_module as _import_module
from typing import TYPE_CHECKING, Any

from milpa_chat.errors import DeclarationError, ToolError

if TYPE_CHECKING:
    from milpa_chat.runtime import ErrorCode, Param, ToolContext, ToolRegistry, ToolResult, VerifyPolicy, tool

#: The runtime's names, loaded on first use: ``import milpa_chat`` loads neither the runtime nor the store.
_FROM_RUNTIME = frozenset({"ErrorCode", "Param", "ToolContext", "ToolRegistry", "ToolResult", "VerifyPolicy", "tool"})


def __getattr__(name: str) -> Any:
    if name in _FROM_RUNTIME:
        from milpa_chat import runtime

        value = getattr(runtime, name)
    elif name in ("runtime", "store"):
        # the subpackages ``import milpa_chat`` once loaded, still reachable as its attributes
        value = _import_module(f"milpa_chat.{name}")
    else:
        raise AttributeError(f"module 'milpa_chat' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


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

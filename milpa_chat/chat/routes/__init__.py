"""The assistant's routes: each kind of inbound event as a pure ``check`` and a ``handle`` (see :mod:`.base`).

``Assistant.routes`` holds them in the order they are asked: a forged tap first; then approval decisions,
edits, pages, "Show all", 👍 / 👎 under the agent's answers, standing grants, tools' own buttons and stale
buttons; then the answer to a prompt, commands (grants, ``/approvals``, the built-ins, tools) and free text,
whose answer :mod:`.answers` shows. Adding a feature is adding a route (``assistant.add_route(route, before=...)``).
"""

from milpa_chat.chat.routes.answers import AgentAnswers, FeedbackTaps
from milpa_chat.chat.routes.base import Route, command_of
from milpa_chat.chat.routes.messages import (
    BUILTIN,
    HIDDEN,
    AgentText,
    ApprovalStats,
    BuiltinCommands,
    GrantRoutes,
    OtherBots,
    PromptReplies,
    ToolCommands,
)
from milpa_chat.chat.routes.pages import PageTaps
from milpa_chat.chat.routes.taps import (
    APPROVAL_ACTIONS,
    ApprovalTaps,
    EditTaps,
    ForgedTaps,
    ShowAllTaps,
    StaleButtons,
    ToolButtons,
)

__all__ = [
    "APPROVAL_ACTIONS",
    "BUILTIN",
    "HIDDEN",
    "AgentAnswers",
    "AgentText",
    "ApprovalStats",
    "ApprovalTaps",
    "BuiltinCommands",
    "EditTaps",
    "FeedbackTaps",
    "ForgedTaps",
    "GrantRoutes",
    "OtherBots",
    "PageTaps",
    "PromptReplies",
    "Route",
    "ShowAllTaps",
    "StaleButtons",
    "ToolButtons",
    "ToolCommands",
    "command_of",
]

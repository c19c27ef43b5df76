"""The channel-neutral chat core: inbound events, identities, durable approvals, the Assistant.

No channel SDK is imported here; ``milpa_chat.bots`` adapts Telegram and Slack to it.
"""

from __future__ import annotations

from milpa_chat.chat.assistant import Agent, Assistant
from milpa_chat.chat.identity import Identities, principal_for
from milpa_chat.chat.inbound import ChatUser, Inbound, MessageRef
from milpa_chat.chat.outbox import ApprovalOutbox
from milpa_chat.chat.surface import EditField, Surface, Traits, Transport
from milpa_chat.runtime.approval import Approval, ApprovalRefused
from milpa_chat.runtime.approvals import ApprovalDesk

__all__ = [
    "Agent",
    "Approval",
    "ApprovalDesk",
    "ApprovalOutbox",
    "ApprovalRefused",
    "Assistant",
    "ChatUser",
    "EditField",
    "Identities",
    "Inbound",
    "MessageRef",
    "Surface",
    "Traits",
    "Transport",
    "principal_for",
]

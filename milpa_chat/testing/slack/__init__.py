"""Test a Slack app with the real slack-bolt / slack_sdk and no network.

* :class:`SlackApiServer` is a local Slack Web API on 127.0.0.1 (``WebClient(base_url=api.base_url)``) that
  keeps channels, messages with their edit history, ephemeral messages, modals and every call, validates Block
  Kit like Slack, and serves ``response_url``.
* :class:`SlackEvents` delivers slash commands, events and button taps to the running app over HTTP, signed
  with the app's signing secret; :class:`SlackRequestSigner` and :class:`SlackPayloads` do the same for
  ``app.dispatch(BoltRequest(**signer.sign(payloads.command(...)).bolt_kwargs()))`` in-process.
* The assistant pane: ``api.open_assistant_thread(user)`` / ``SlackEvents.assistant_thread_started(...)``,
  ``assistant.threads.setStatus/setSuggestedPrompts/setTitle`` checked as Slack does, read back with
  ``api.assistant_thread(channel, thread_ts)`` (:class:`AssistantThread`).
* :func:`serve_bolt_app` serves an ``AsyncApp`` over HTTP on a random local port.

Needs the ``slack`` extra (slack-sdk, aiohttp).
"""

from __future__ import annotations

from milpa_chat.testing.slack.assistant_threads import AssistantThread
from milpa_chat.testing.slack.blocks import MAX_MESSAGE_BLOCKS, MAX_VIEW_BLOCKS, block_errors
from milpa_chat.testing.slack.events import SlackAckTimeout, SlackAppResponse, SlackEvents, serve_bolt_app
from milpa_chat.testing.slack.models import (
    SlackApiCall,
    SlackChannel,
    SlackMessage,
    SlackMessageVersion,
    SlackMethodError,
    SlackView,
)
from milpa_chat.testing.slack.payloads import SlackPayloads, new_event_id
from milpa_chat.testing.slack.server import SlackApiServer
from milpa_chat.testing.slack.signing import STALE_AGE, SlackRequest, SlackRequestSigner, SlackSignedRequest

__all__ = [
    "MAX_MESSAGE_BLOCKS",
    "MAX_VIEW_BLOCKS",
    "STALE_AGE",
    "AssistantThread",
    "SlackAckTimeout",
    "SlackApiCall",
    "SlackApiServer",
    "SlackAppResponse",
    "SlackChannel",
    "SlackEvents",
    "SlackMessage",
    "SlackMessageVersion",
    "SlackMethodError",
    "SlackPayloads",
    "SlackRequest",
    "SlackRequestSigner",
    "SlackSignedRequest",
    "SlackView",
    "block_errors",
    "new_event_id",
    "serve_bolt_app",
]

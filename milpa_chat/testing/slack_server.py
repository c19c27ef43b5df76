"""Temporary alias of :mod:`milpa_chat.testing.slack.server` (the old module path); import from there."""

from milpa_chat.testing.slack.server import *  # noqa: F403

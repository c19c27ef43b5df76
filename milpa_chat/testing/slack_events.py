"""Temporary alias of :mod:`milpa_chat.testing.slack.events` (the old module path); import from there."""

from milpa_chat.testing.slack.events import *  # noqa: F403

"""Temporary alias of :mod:`milpa_chat.testing.slack.workspace` (the old module path); import from there."""

from milpa_chat.testing.slack.workspace import *  # noqa: F403

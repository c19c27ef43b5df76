"""Temporary alias of :mod:`milpa_chat.testing.slack.blocks` (the old module path); import from there."""

from milpa_chat.testing.slack.blocks import *  # noqa: F403

"""Temporary alias of :mod:`milpa_chat.testing.slack.signing` (the old module path); import from there."""

from milpa_chat.testing.slack.signing import *  # noqa: F403

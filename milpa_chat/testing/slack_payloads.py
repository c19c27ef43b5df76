"""Temporary alias of :mod:`milpa_chat.testing.slack.payloads` (the old module path); import from there."""

from milpa_chat.testing.slack.payloads import *  # noqa: F403

"""Temporary alias of :mod:`milpa_chat.testing.slack.models` (the old module path); import from there."""

from milpa_chat.testing.slack.models import *  # noqa: F403

"""Temporary alias of :mod:`milpa_chat.testing.telegram.updates` (the old module path); import from there."""

from milpa_chat.testing.telegram.updates import *  # noqa: F403

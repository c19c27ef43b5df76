"""Temporary alias of :mod:`milpa_chat.testing.telegram.waiting` (the old module path); import from there."""

from milpa_chat.testing.telegram.waiting import *  # noqa: F403

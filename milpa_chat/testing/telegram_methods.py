"""Temporary alias of :mod:`milpa_chat.testing.telegram.methods` (the old module path); import from there."""

from milpa_chat.testing.telegram.methods import *  # noqa: F403

"""Temporary alias of :mod:`milpa_chat.testing.telegram.html` (the old module path); import from there."""

from milpa_chat.testing.telegram.html import *  # noqa: F403

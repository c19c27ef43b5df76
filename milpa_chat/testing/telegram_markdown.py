"""Temporary alias of :mod:`milpa_chat.testing.telegram.markdown` (the old module path); import from there."""

from milpa_chat.testing.telegram.markdown import *  # noqa: F403

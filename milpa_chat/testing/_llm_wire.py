"""Temporary alias of :mod:`milpa_chat.testing.llm.wire` (the old module path); import from there."""

from milpa_chat.testing.llm.wire import *  # noqa: F403

"""Temporary alias of :mod:`milpa_chat.testing.telegram.validate` (the old module path); import from there."""

from milpa_chat.testing.telegram.validate import *  # noqa: F403

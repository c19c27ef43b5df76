"""The old address of :mod:`milpa_chat.grants.chat`: importing it gives that very module."""

from __future__ import annotations

import sys

from milpa_chat.grants import chat as _moved
from milpa_chat.grants.chat import *  # noqa: F403

sys.modules[__name__] = _moved

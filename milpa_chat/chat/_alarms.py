"""The loop's shared alarms (:mod:`milpa_chat.runtime._alarms`), as the chat has always imported them."""

from milpa_chat.runtime._alarms import Alarms, alarms

__all__ = ["Alarms", "alarms"]

"""The example tools the assistants in this folder serve (they ship with the package as
:mod:`milpa_chat.examples`); put tools of your own next to them and point the assistant at them."""

from milpa_chat.examples import ExampleTools

__all__ = ["ExampleTools"]

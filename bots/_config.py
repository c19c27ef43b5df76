"""What the runnable assistants share: configuration errors, reading numbers from the environment,
and building the example assistant."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

from bots.tools import ExampleTools
from milpa_chat import ToolRegistry
from milpa_chat.chat import Assistant, Identities
from milpa_chat.store import open_store

N = TypeVar("N", int, float)


class ConfigError(ValueError):
    """The environment does not describe a runnable assistant; the message says what to set."""


def number(env: Mapping[str, str], name: str, default: N, kind: type[N]) -> N:
    """``env[name]`` as ``kind`` (``default`` when unset); a value that is not one names the variable."""
    raw = env.get(name)
    if not raw:
        return default
    try:
        return kind(raw)
    except ValueError:
        if kind is int:
            raise ConfigError(
                f"{name}={raw!r} is not a whole number: {name} must be a whole number, like {default}"
            ) from None
        raise ConfigError(
            f"{name}={raw!r} is not a float: {name} must be a number of seconds, like {default} or 0.5"
        ) from None


def build_assistant(
    store_url: str, identities: Path, *, lease: float = 30.0, handoff: float = 30.0
) -> tuple[Assistant, ExampleTools]:
    """The assistant with the example tools, over the configured store and identities.

    ``lease``: seconds a claimed run may take before it counts as lost; ``handoff``: seconds before
    another worker delivers the cards of a change this worker made (``MILPA_APPROVAL_LEASE``,
    ``MILPA_APPROVAL_HANDOFF``).
    """
    store = open_store(store_url)
    tools = ExampleTools(store)
    registry = ToolRegistry(store=store, approval_lease=lease, approval_handoff=handoff)
    registry.scan(tools)
    return Assistant(registry, Identities.from_toml(identities), name="Notes & payments assistant"), tools

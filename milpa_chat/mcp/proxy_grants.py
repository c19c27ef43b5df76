"""Proxied tools as :class:`~milpa_chat.command.Operation` s, so standing grants can name and lend them.

A standing grant names an operation (``notes:delete_note``: the upstream's name, a colon, the tool's
name), lends only to a call whose content it can say, and only within its effect ceiling. An upstream
tool declares neither, so the proxy file says them per tool: ``acts_on = "path"`` (the argument naming
what a call acts on; its content is the SHA-256 of that value) and ``effects = {mutation = ..., ...}``
(an :class:`~milpa_chat.command.EffectProfile`; a ``readOnlyHint`` tool is a canonical read, any other
tool without ``effects`` is unclassified, which no grant short of "anything" covers). A read-only tool
whose result says ``{"holds": true|false}`` measures a grant's condition on that content; any read-only
call is a sign of life for a falsifier watching it. When the registry has a ``GrantDesk``
(``registry.grants``), the proxy tells it every operation it imports.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from milpa_chat.command.atom import Operation
from milpa_chat.command.effects import EffectProfile
from milpa_chat.grants.rules import is_operation_name

if TYPE_CHECKING:
    from milpa_chat.mcp.proxy_config import UpstreamConfig
    from milpa_chat.runtime.definition import ToolDefinition

__all__ = ["content_of_argument", "operation_for", "operation_name"]


def operation_name(upstream: UpstreamConfig, tool: str) -> str | None:
    """``<upstream>:<tool>`` when a grant can name it (``None`` otherwise: no grant covers the tool)."""
    name = f"{upstream.name}:{tool}"
    return name if is_operation_name(name) else None


def content_of_argument(argument: str) -> Callable[[Mapping[str, Any]], str | None]:
    """``acts_on`` for an argument: ``sha256:<hex>`` of its canonical JSON value (``None`` when absent)."""

    def acts_on(arguments: Mapping[str, Any]) -> str | None:
        if argument not in arguments:
            return None
        text = json.dumps(arguments[argument], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

    acts_on.__qualname__ = f"acts_on:{argument}"
    return acts_on


def operation_for(upstream: UpstreamConfig, tool: str, definition: ToolDefinition) -> Operation | None:
    """The operation a grant names for the imported ``definition`` of upstream ``tool`` (``None``: not nameable)."""
    name = operation_name(upstream, tool)
    if name is None:
        return None
    rule = upstream.rule(tool)
    if rule.effects is not None:
        effects: EffectProfile | None = EffectProfile(**dict[str, Any](rule.effects))
    else:
        effects = None if definition.mutating else EffectProfile.read_only()
    return Operation(
        name,
        definition.description,
        definition.invoke,
        input_schema=definition.input_schema,
        mutating=definition.mutating,
        scopes=definition.scopes,
        effects=effects,
        acts_on=content_of_argument(rule.acts_on) if rule.acts_on else None,
    )

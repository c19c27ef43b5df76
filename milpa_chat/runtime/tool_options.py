"""The options of ``@tool(...)`` and of hand-registered tools, checked when the tool is declared."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from milpa_chat.errors import DeclarationError
from milpa_chat.runtime.definition import VerifyPolicy

__all__ = ["TOOL_NAME", "ToolOptions", "tool_options"]

#: Tool names: 1-64 of letters, digits, ``_``, ``-`` and ``.`` (what MCP and the LLM providers accept;
#: OpenAI and Anthropic do not accept ``.``, so prefer ``_`` for tools an agent will call).
TOOL_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,63}$")


@dataclass(frozen=True, slots=True)
class ToolOptions:
    name: str | None
    description: str | None
    scopes: tuple[str, ...]
    mutating: bool
    confirm: bool
    timeout: float
    version: str | None
    verify: VerifyPolicy | None
    tags: tuple[str, ...]


def _names(value: Any, what: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise DeclarationError(f"{what}= takes a list of strings, got {value!r}; write {what}=[{value!r}]")
    items = tuple(value)
    if not all(isinstance(v, str) and v for v in items):
        raise DeclarationError(f"{what}= takes a list of non-empty strings, got {value!r}")
    return items


def _check_name(name: Any) -> None:
    if name is not None and not (isinstance(name, str) and TOOL_NAME.match(name)):
        raise DeclarationError(
            f"Tool name {name!r} is not valid: use 1-64 letters, digits, '_', '-' or '.', e.g. 'list_notes'"
        )


def tool_options(name: Any, description: Any, **kw: Any) -> ToolOptions:
    """Check and normalise the keyword options (``scopes``, ``mutating``, ... ``tags``)."""
    _check_name(name)
    if description is not None and not (isinstance(description, str) and description.strip()):
        raise DeclarationError(f"Tool {name!r}: the description must be a non-empty string, got {description!r}")
    for flag in ("mutating", "confirm"):
        if not isinstance(kw[flag], bool):
            raise DeclarationError(f"Tool {name!r}: {flag}= must be True or False, got {kw[flag]!r}")
    timeout = kw["timeout"]
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < math.inf:
        raise DeclarationError(f"Tool {name!r}: timeout= must be a positive number of seconds, got {timeout!r}")
    if kw["version"] is not None and not isinstance(kw["version"], str):
        raise DeclarationError(f"Tool {name!r}: version= must be a string such as '1.2', got {kw['version']!r}")
    if kw["verify"] is not None and not isinstance(kw["verify"], VerifyPolicy):
        raise DeclarationError(f"Tool {name!r}: verify= takes a VerifyPolicy(...), got {kw['verify']!r}")
    return ToolOptions(
        name=name,
        description=description,
        scopes=_names(kw["scopes"], "scopes"),
        mutating=kw["mutating"],
        confirm=kw["confirm"],
        timeout=float(timeout),
        version=kw["version"],
        verify=kw["verify"],
        tags=_names(kw["tags"], "tags"),
    )

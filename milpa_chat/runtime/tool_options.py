"""The options of ``@tool(...)`` and of hand-registered tools, checked when the tool is declared."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from milpa_chat.errors import DeclarationError
from milpa_chat.runtime.definition import VerifyPolicy

__all__ = ["RESERVED_ARGUMENTS", "TOOL_NAME", "ToolOptions", "check_argument_name", "tool_options"]

#: Tool names: 1-64 of letters, digits, ``_``, ``-`` and ``.`` (what MCP and the LLM providers accept;
#: OpenAI and Anthropic do not accept ``.``, so prefer ``_`` for tools an agent will call).
TOOL_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,63}$")

#: Argument names the pipeline takes for itself; a tool parameter with one of them would never
#: receive its value (or, for ``_ctx``, would be hidden from audit lines and approval cards).
RESERVED_ARGUMENTS: dict[str, str] = {
    "confirm_token": "the pipeline takes it out of the arguments to replay a confirmed call",
    "verification_id": "the pipeline takes it out of the arguments to run an approved call",
    "_ctx": "audit lines and approval cards leave it out, so approvers would not see it",
}


def check_argument_name(where: str, name: str) -> None:
    """Raise :class:`DeclarationError` when ``name`` is one of :data:`RESERVED_ARGUMENTS`."""
    why = RESERVED_ARGUMENTS.get(name)
    if why is not None:
        raise DeclarationError(f"{where}: the argument name {name!r} is reserved ({why}); rename the parameter")


@dataclass(frozen=True, slots=True)
class ToolOptions:
    name: str | None
    description: str | None
    scopes: tuple[str, ...]
    mutating: bool | None  # None: undeclared (every gate treats the tool as mutating)
    confirm: bool
    timeout: float
    version: str | None
    verify: VerifyPolicy | None
    tags: tuple[str, ...]
    blocking: bool = True  # a ``def`` tool runs on a worker thread; False: on the event loop itself


def _names(value: Any, what: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise DeclarationError(f"{what}= takes a list of strings, got {value!r}; write {what}=[{value!r}]")
    items = tuple(value)
    if not all(isinstance(v, str) and v for v in items):
        raise DeclarationError(f"{what}= takes a list of non-empty strings, got {value!r}")
    if what == "scopes" and any(part != part.strip() or " " in part for part in items):
        split = [w for part in items for w in part.split()]
        raise DeclarationError(
            f"scopes= names one scope per string, without spaces, got {value!r}; write scopes={split!r}"
        )
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
    if kw["mutating"] is not None and not isinstance(kw["mutating"], bool):
        raise DeclarationError(f"Tool {name!r}: mutating= must be True or False, got {kw['mutating']!r}")
    if not isinstance(kw["confirm"], bool):
        raise DeclarationError(f"Tool {name!r}: confirm= must be True or False, got {kw['confirm']!r}")
    timeout = kw["timeout"]
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < math.inf:
        raise DeclarationError(f"Tool {name!r}: timeout= must be a positive number of seconds, got {timeout!r}")
    if kw["version"] is not None and not isinstance(kw["version"], str):
        raise DeclarationError(f"Tool {name!r}: version= must be a string such as '1.2', got {kw['version']!r}")
    blocking = kw.get("blocking", True)
    if not isinstance(blocking, bool):
        raise DeclarationError(f"Tool {name!r}: blocking= must be True or False, got {blocking!r}")
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
        blocking=blocking,
    )

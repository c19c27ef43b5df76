"""Registry tools as MCP tools, and tool results as MCP results: plain data, no SDK import.

* **Annotations.** A tool projected from a :class:`milpa_chat.command.Operation` carries its effect
  ceiling (``tool.extra["effects"]``): ``readOnlyHint`` is mutation ``none``, ``destructiveHint``
  holds unless the change is ``guaranteed`` or ``compensatable`` to undo, ``openWorldHint`` unless
  the effect stays with the caller (externality ``none`` / ``same_principal``). A plain ``@tool``
  only says whether it mutates: a mutating (or confirm / verify) tool is destructive as far as
  anyone knows, and its world is left unsaid (the MCP default, open). ``idempotentHint`` is
  ``registry.register(..., idempotent=True)``, and every read.
* **Output schema.** MCP wants an object at the root: a tool that returns a number or a list is
  advertised as ``{"result": <its schema>}`` and its value sent the same way. A tool that may ask
  for an approval first may also answer ``{"approval": {...}}`` (what is pending), so its schema says
  either (``anyOf``), with the tool's ``$defs`` kept at the root where its ``$ref`` s point.
* **Results.** Success: ``structuredContent`` is the data, the text is the message and the data as
  JSON. Failure: ``isError`` with the error text (already redacted by the pipeline) and the code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from milpa_chat.runtime.definition import ToolDefinition
    from milpa_chat.runtime.result import ToolResult

__all__ = ["PENDING_SCHEMA", "Reply", "annotations_for", "error_reply", "output_schema_for", "reply_for"]

#: Reversibility levels whose change is not destructive (it can be taken back).
_UNDOABLE = frozenset({"guaranteed", "compensatable", "not_applicable"})
#: Externality levels that keep the effect inside a closed world.
_CLOSED = frozenset({"none", "same_principal"})

#: What a call that opened an approval answers (see :mod:`milpa_chat.mcp.approvals`).
PENDING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approval": {
            "type": "object",
            "properties": {
                "approval_id": {"type": "string"},
                "kind": {"enum": ["confirm", "verification"]},
                "state": {"type": "string"},
                "next": {"type": "string"},
            },
            "required": ["approval_id", "kind", "state", "next"],
        }
    },
    "required": ["approval"],
}


def _effects(tool: ToolDefinition) -> Mapping[str, Any] | None:
    effects = tool.extra.get("effects")
    return effects if isinstance(effects, Mapping) and "mutation" in effects else None


def annotations_for(tool: ToolDefinition) -> dict[str, Any]:
    """``readOnlyHint`` / ``destructiveHint`` / ``idempotentHint`` / ``openWorldHint`` of ``tool`` (wire names)."""
    effects = _effects(tool)
    hints: dict[str, Any] = {}
    if effects is not None:
        read_only = effects["mutation"] == "none"
        destructive = str(effects.get("reversibility")) not in _UNDOABLE
        hints["openWorldHint"] = str(effects.get("externality")) not in _CLOSED
    else:
        read_only = not (tool.mutating or tool.confirm or tool.verify is not None)
        destructive = True
    hints["readOnlyHint"] = read_only
    hints["destructiveHint"] = False if read_only else destructive
    hints["idempotentHint"] = read_only or tool.idempotent
    return hints


def _is_object_schema(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "object"


def output_schema_for(tool: ToolDefinition, *, may_ask: bool) -> tuple[dict[str, Any] | None, bool]:
    """``(advertised output schema, wrapped)``: ``wrapped`` when values travel as ``{"result": value}``."""
    if tool.output_schema is None:
        return None, False
    inner = dict(tool.output_schema)
    defs = inner.pop("$defs", None)
    inner.pop("$schema", None)
    wrapped = not _is_object_schema(inner)
    if wrapped:
        inner = {"type": "object", "properties": {"result": inner}, "required": ["result"]}
    schema: dict[str, Any] = {"type": "object", "anyOf": [inner, PENDING_SCHEMA]} if may_ask else inner
    if defs:
        schema["$defs"] = defs
    return schema, wrapped


@dataclass(frozen=True, slots=True)
class Reply:
    """An MCP tool result as data: ``text`` content, ``structured`` content, ``is_error``."""

    text: str
    structured: dict[str, Any] | None
    is_error: bool = False


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def reply_for(result: ToolResult, *, wrapped: bool = False) -> Reply:
    """A finished call's result (pending approvals are answered by :mod:`milpa_chat.mcp.approvals`)."""
    if not result.success:
        return error_reply(result.error or "The call failed.", code=result.code, data=result.data)
    data = result.data
    structured: dict[str, Any] | None
    if data is None:
        structured = {"result": None} if wrapped else None
    elif isinstance(data, dict) and not wrapped:
        structured = data
    else:
        structured = {"result": data}
    shown = data if isinstance(data, str) else None if data is None else _json(data)
    parts = [p for p in (result.message, shown) if p]
    return Reply("\n".join(parts) or "Done.", structured)


def error_reply(message: str, *, code: str | None = None, data: Any = None) -> Reply:
    """``isError`` with the error text; ``structuredContent.error`` holds the code and any details."""
    error: dict[str, Any] = {"code": code or "ERROR", "message": message}
    if data is not None:
        error["data"] = data
    return Reply(message, {"error": error}, is_error=True)

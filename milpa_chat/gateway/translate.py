"""OpenAI chat format <-> Anthropic Messages format, on plain JSON-shaped dicts.

Callers of the gateway speak one shape, OpenAI's chat format: ``system`` / ``user`` / ``assistant``
messages (an assistant message may carry ``tool_calls``) and ``tool`` messages answering them by
``tool_call_id``. For Anthropic this module translates both ways:

* outbound (:func:`to_anthropic`): every system message goes into the top-level ``system`` text;
  tool messages become ``tool_result`` blocks in a user message (consecutive ones, and a user
  message right after them, are merged into one user turn, tool results first); assistant
  ``tool_calls`` become ``tool_use`` blocks whose ``input`` is the parsed arguments object (``{}``
  when the arguments are empty, invalid or not an object); blank text is dropped;
* tools (:func:`anthropic_tools`, :func:`openai_tools`): ``{name, description, input_schema}``
  resp. ``{type: function, function: {name, description, parameters}}``, with ``type: object``
  added and a missing or empty ``properties`` written as ``{}`` (a JSON object);
* inbound (:func:`from_anthropic`): the content blocks are flattened into one assistant message,
  text blocks concatenated and ``tool_use`` blocks turned into ``tool_calls`` (arguments are the
  input as compact JSON; ``{}`` stays ``"{}"``).

Tool-call ids are never invented or rewritten. Nothing here imports a provider SDK.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AnthropicRequest",
    "MalformedResponseError",
    "ToolSpec",
    "anthropic_tools",
    "from_anthropic",
    "from_openai",
    "object_schema",
    "openai_tools",
    "parse_arguments",
    "to_anthropic",
    "tool_spec",
]

JsonDict = dict[str, Any]


class MalformedResponseError(ValueError):
    """A provider response lacks what the gateway needs (no choices, unknown tool-call type ...)."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool as the model sees it: name, description and JSON Schema of the arguments."""

    name: str
    description: str
    schema: JsonDict


@dataclass(frozen=True, slots=True)
class AnthropicRequest:
    """The translated history: top-level ``system`` text (``None`` when there is none) and messages."""

    system: str | None
    messages: list[JsonDict]


# --- tools ---------------------------------------------------------------------------------------


def object_schema(schema: Mapping[str, Any] | None) -> JsonDict:
    """``schema`` with ``type: object`` when untyped and ``properties: {}`` when missing or empty."""
    out: JsonDict = dict(schema or {})
    out.setdefault("type", "object")
    if not out.get("properties"):
        out["properties"] = {}
    return out


def tool_spec(tool: Mapping[str, Any] | object) -> ToolSpec:
    """Read one tool description in any of the shapes the gateway accepts.

    * ``{"type": "function", "function": {"name", "description", "parameters"}}`` (OpenAI);
    * ``{"name", "description", "inputSchema" | "input_schema" | "parameters"}`` (registry
      summaries, MCP, Anthropic);
    * an object with ``name``, ``description`` and ``input_schema`` attributes (``ToolDefinition``).
    """
    if not isinstance(tool, Mapping):
        return ToolSpec(
            name=str(getattr(tool, "name")),  # noqa: B009 - raises AttributeError naming the field
            description=str(getattr(tool, "description", "") or ""),
            schema=object_schema(getattr(tool, "input_schema", None)),
        )
    function = tool.get("function")
    if tool.get("type") == "function" and isinstance(function, Mapping):
        tool = function
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"A tool needs a non-empty string 'name'; got {dict(tool)!r}")
    schema = next((tool[k] for k in ("inputSchema", "input_schema", "parameters") if tool.get(k) is not None), None)
    return ToolSpec(name=name, description=str(tool.get("description") or ""), schema=object_schema(schema))


def openai_tools(tools: Iterable[Mapping[str, Any] | object]) -> list[JsonDict]:
    """Tools in the chat-completions ``tools`` shape."""
    specs = [tool_spec(t) for t in tools]
    return [
        {"type": "function", "function": {"name": s.name, "description": s.description, "parameters": s.schema}}
        for s in specs
    ]


def anthropic_tools(tools: Iterable[Mapping[str, Any] | object]) -> list[JsonDict]:
    """Tools in the Messages API ``tools`` shape."""
    specs = [tool_spec(t) for t in tools]
    return [{"name": s.name, "description": s.description, "input_schema": s.schema} for s in specs]


# --- outbound ------------------------------------------------------------------------------------


def parse_arguments(arguments: Any) -> JsonDict:
    """A tool call's arguments as an object: a JSON string is decoded; anything not an object is ``{}``."""
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if isinstance(arguments, str | bytes) and arguments:
        try:
            decoded = json.loads(arguments)
        except ValueError:
            return {}
        return decoded if isinstance(decoded, dict) else {}
    return {}


def _text_of(content: Any) -> str:
    """Plain text of an OpenAI ``content`` (a string or a list of parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, Mapping) and p.get("type") == "text")
    return str(content)


def _image_block(part: Mapping[str, Any]) -> JsonDict:
    image = part.get("image_url")
    url = str(image.get("url") if isinstance(image, Mapping) else image or "")
    if url.startswith("data:") and ";base64," in url:
        media_type, data = url[5:].split(";base64,", 1)
        return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _content_blocks(content: Any) -> list[JsonDict]:
    """OpenAI ``content`` as Anthropic blocks; blank text is dropped (Anthropic refuses it)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content.strip() else []
    blocks: list[JsonDict] = []
    for part in content:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text" and str(part.get("text") or "").strip():
            blocks.append({"type": "text", "text": str(part["text"])})
        elif kind == "image_url":
            blocks.append(_image_block(part))
    return blocks


def _tool_use(call: Mapping[str, Any], index: int) -> JsonDict:
    function = call.get("function")
    call_id = call.get("id")
    if not isinstance(function, Mapping) or not isinstance(call_id, str) or not call_id:
        raise ValueError(f"messages[{index}].tool_calls: each call needs an 'id' and a 'function'; got {call!r}")
    input_ = parse_arguments(function.get("arguments"))
    return {"type": "tool_use", "id": call_id, "name": str(function.get("name") or ""), "input": input_}


def _tool_result(message: Mapping[str, Any], index: int) -> JsonDict:
    call_id = message.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise ValueError(f"messages[{index}] has role 'tool' but no 'tool_call_id' naming the call it answers")
    return {"type": "tool_result", "tool_use_id": call_id, "content": _text_of(message.get("content"))}


def _turn(message: Mapping[str, Any], index: int) -> tuple[str, list[JsonDict]]:
    role = message.get("role")
    if role == "tool":
        return "user", [_tool_result(message, index)]
    if role == "assistant":
        blocks = _content_blocks(message.get("content"))
        return "assistant", blocks + [_tool_use(c, index) for c in message.get("tool_calls") or ()]
    if role == "user":
        return "user", _content_blocks(message.get("content"))
    raise ValueError(f"messages[{index}] has unknown role {role!r}; use system, user, assistant or tool")


def _collapse(role: str, blocks: list[JsonDict]) -> JsonDict:
    if len(blocks) == 1 and blocks[0]["type"] == "text":
        return {"role": role, "content": blocks[0]["text"]}
    return {"role": role, "content": blocks}


def to_anthropic(messages: Sequence[Mapping[str, Any]]) -> AnthropicRequest:
    """Translate an OpenAI-format history into Anthropic's ``system`` + ``messages``.

    Consecutive turns of the same role are merged into one (Anthropic wants alternating roles and
    every tool result of a step in the single user turn after the ``tool_use``); within a merged
    user turn the ``tool_result`` blocks come first, as Anthropic requires.
    """
    system: list[str] = []
    turns: list[tuple[str, list[JsonDict]]] = []
    for index, message in enumerate(messages):
        if message.get("role") in ("system", "developer"):
            system.append(_text_of(message.get("content")))
            continue
        role, blocks = _turn(message, index)
        if not blocks:
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    out: list[JsonDict] = []
    for role, blocks in turns:
        if role == "user":
            blocks.sort(key=lambda b: b["type"] != "tool_result")  # stable: results first, order kept
        out.append(_collapse(role, blocks))
    text = "\n".join(system).strip()
    return AnthropicRequest(system=text or None, messages=out)


# --- inbound -------------------------------------------------------------------------------------


def _compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def from_anthropic(content: Iterable[Mapping[str, Any]] | None) -> JsonDict:
    """Flatten Anthropic content blocks into one OpenAI-shaped assistant message.

    ``content`` is always a string (``""`` when the model wrote none); ``tool_calls`` is present only
    when there was at least one ``tool_use`` block. Other block types (thinking ...) are skipped.
    """
    texts: list[str] = []
    calls: list[JsonDict] = []
    for block in content or ():
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "tool_use":
            call_id, name = block.get("id"), block.get("name")
            if not isinstance(call_id, str) or not isinstance(name, str):
                raise MalformedResponseError(f"tool_use block without id or name: {dict(block)!r}")
            input_ = block.get("input")
            arguments = _compact_json(input_ if input_ is not None else {})
            calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
    message: JsonDict = {"role": "assistant", "content": "".join(texts)}
    if calls:
        message["tool_calls"] = calls
    return message


def _openai_call(call: Mapping[str, Any]) -> JsonDict:
    function = call.get("function")
    if call.get("type", "function") != "function" or not isinstance(function, Mapping):
        raise MalformedResponseError(f"unsupported tool call (only function calls are): {dict(call)!r}")
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        arguments = _compact_json(arguments if arguments is not None else {})
    return {
        "id": str(call.get("id") or ""),
        "type": "function",
        "function": {"name": str(function.get("name") or ""), "arguments": arguments},
    }


def from_openai(message: Mapping[str, Any] | None) -> JsonDict:
    """Normalise a chat-completions response message to the gateway's assistant-message shape.

    ``content`` becomes a string (``""`` for ``null``), ``tool_calls`` is kept only when non-empty
    and other provider keys are dropped, so the message can go back into the history as is.
    """
    if not isinstance(message, Mapping):
        raise MalformedResponseError("the response has no choices[0].message")
    content = _text_of(message.get("content"))
    refusal = message.get("refusal")
    if not content and isinstance(refusal, str):
        content = refusal  # the model declined; its explanation is the answer the caller shows
    out: JsonDict = {"role": "assistant", "content": content}
    calls = [_openai_call(c) for c in message.get("tool_calls") or ()]
    if calls:
        out["tool_calls"] = calls
    return out

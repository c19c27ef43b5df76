"""The fake LLM servers' records and scripts, and their request checks.

The checks are what the real APIs refuse with HTTP 400, where cheap: each returns the error
message the provider would give, or ``None`` for a valid body.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "RecordedRequest",
    "ScriptedReply",
    "ScriptedToolCall",
    "anthropic_problem",
    "openai_problem",
]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as received.

    ``status`` is what the server answered and ``error`` its error message; ``rejected`` is true
    when the server's own checks refused the request (key, headers, validation, empty script)
    rather than a scripted reply. ``at``: ``time.monotonic()`` when it was received.
    """

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    status: int
    error: str | None = None
    rejected: bool = False
    at: float = 0.0


@dataclass(frozen=True, slots=True)
class ScriptedToolCall:
    """A tool call the fake model makes. ``id`` is generated when ``None``."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True, slots=True)
class ScriptedReply:
    """One scripted answer: a completion (``status`` 200) or an error (``status`` >= 400).

    ``raw_body`` is sent verbatim instead of a rendered body; ``delay`` seconds pass first. Asked to
    stream (``"stream": true``), the text goes out a word at a time, ``chunk_delay`` seconds apart.
    """

    text: str = ""
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    status: int = 200
    error_message: str | None = None
    error_type: str | None = None
    error_code: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw_body: str | None = None
    usage: tuple[int, int] | None = None
    finish_reason: str | None = None
    chunk_delay: float = 0.0


_OPENAI_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_ANTHROPIC_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
_OPENAI_ROLES = {"system", "developer", "user", "assistant", "tool"}
_ANTHROPIC_BLOCKS = {"text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking"}


def _schema_problem(where: str, schema: Any) -> str | None:
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        return f"{where}: JSON schema is invalid - the root must be an object schema (type: object)"
    if "properties" in schema and not isinstance(schema["properties"], Mapping):
        return f"{where}.properties: Input should be a valid dictionary"
    return None


# --- OpenAI chat completions ---------------------------------------------------------------------


def _openai_tools_problem(tools: Any) -> str | None:
    if not isinstance(tools, list):
        return "Invalid type for 'tools': expected an array."
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(function, Mapping) or tool.get("type") != "function":
            return f"Missing required parameter: 'tools[{i}].function'."
        if not isinstance(function.get("name"), str) or not _OPENAI_TOOL_NAME.match(function["name"]):
            return f"Invalid 'tools[{i}].function.name': string does not match pattern '^[a-zA-Z0-9_-]+$'."
        if "parameters" in function:
            problem = _schema_problem(f"tools[{i}].function.parameters", function["parameters"])
            if problem:
                return f"Invalid schema for function '{function['name']}': {problem}"
    return None


def _openai_calls(message: Mapping[str, Any], i: int) -> tuple[list[str], str | None]:
    calls = message.get("tool_calls")
    if calls is None:
        return [], None
    if not isinstance(calls, list) or not calls:
        return [], f"Invalid 'messages[{i}].tool_calls': empty array. Expected an array with minimum length 1."
    ids: list[str] = []
    for j, call in enumerate(calls):
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(call.get("id"), str):
            return [], f"Missing required parameter: 'messages[{i}].tool_calls[{j}].id' or '.function'."
        if not isinstance(function.get("name"), str) or not isinstance(function.get("arguments"), str):
            return [], f"Invalid 'messages[{i}].tool_calls[{j}].function': name and arguments must be strings."
        ids.append(call["id"])
    return ids, None


def _openai_message_problem(message: Any, i: int) -> str | None:
    if not isinstance(message, Mapping) or message.get("role") not in _OPENAI_ROLES:
        role = message.get("role") if isinstance(message, Mapping) else None
        return f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', 'tool', 'developer'."
    content = message.get("content")
    if content is None and not (message["role"] == "assistant" and message.get("tool_calls")):
        return f"Invalid value for 'messages[{i}].content': expected a string or an array, got null."
    if content is not None and not isinstance(content, str | list):
        return f"Invalid type for 'messages[{i}].content': expected one of a string or array of objects."
    return None


def openai_problem(body: Mapping[str, Any]) -> str | None:
    """Why the chat-completions API would refuse ``body``; ``None`` when it would accept it."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "Invalid 'messages': empty array. Expected an array with minimum length 1."
    if "tools" in body and (problem := _openai_tools_problem(body["tools"])):
        return problem
    pending: list[str] = []
    for i, message in enumerate(messages):
        if problem := _openai_message_problem(message, i):
            return problem
        if message["role"] == "tool":
            if message.get("tool_call_id") not in pending:
                return (
                    f"Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                    f"message with 'tool_calls' (messages[{i}].tool_call_id={message.get('tool_call_id')!r})."
                )
            pending.remove(message["tool_call_id"])
            continue
        if pending:
            return _unanswered(pending)
        pending, problem = _openai_calls(message, i) if message["role"] == "assistant" else ([], None)
        if problem:
            return problem
    return _unanswered(pending) if pending else None


def _unanswered(ids: list[str]) -> str:
    return (
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(ids)}"
    )


# --- Anthropic messages --------------------------------------------------------------------------


def _anthropic_tools_problem(tools: Any) -> str | None:
    if not isinstance(tools, list):
        return "tools: Input should be a valid list"
    names: set[str] = set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            return f"tools.{i}.name: Field required"
        if not _ANTHROPIC_TOOL_NAME.match(tool["name"]):
            return f"tools.{i}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
        if tool["name"] in names:
            return f"tools: Tool names must be unique. Found duplicate: {tool['name']}"
        names.add(tool["name"])
        if problem := _schema_problem(f"tools.{i}.input_schema", tool.get("input_schema")):
            return problem
    return None


def _block_problem(block: Any, where: str, role: str) -> str | None:
    kind = block.get("type") if isinstance(block, Mapping) else None
    if kind not in _ANTHROPIC_BLOCKS:
        return f"{where}.type: Input tag {kind!r} found using 'type' does not match any of the expected tags"
    if kind == "text" and not str(block.get("text") or "").strip():
        return f"{where}: text content blocks must contain non-whitespace text"
    if kind == "tool_use" and (
        role != "assistant" or not isinstance(block.get("id"), str) or not isinstance(block.get("input"), Mapping)
    ):
        return f"{where}: tool_use blocks need an id and an object input, and only appear in assistant turns"
    if kind == "tool_result" and (role != "user" or not isinstance(block.get("tool_use_id"), str)):
        return f"{where}: tool_result blocks need a tool_use_id, and only appear in user turns"
    return None


def _content_blocks(message: Mapping[str, Any], i: int) -> tuple[list[Mapping[str, Any]], str | None]:
    content = message.get("content")
    if isinstance(content, str):
        if not content.strip():
            return [], f"messages.{i}: text content blocks must contain non-whitespace text"
        return [{"type": "text", "text": content}], None
    if not isinstance(content, list) or not content:
        return [], (
            f"messages.{i}: all messages must have non-empty content except for the optional final assistant message"
        )
    for j, block in enumerate(content):
        if problem := _block_problem(block, f"messages.{i}.content.{j}", str(message.get("role"))):
            return [], problem
    return content, None


def _tool_chain_problem(blocks: list[Mapping[str, Any]], expected: list[str], i: int) -> str | None:
    results = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
    first_other = next((k for k, b in enumerate(blocks) if b.get("type") != "tool_result"), len(blocks))
    if any(b.get("type") == "tool_result" for b in blocks[first_other:]):
        return f"messages.{i}: tool_result blocks must come before any other content in the user turn"
    stray = [r for r in results if r not in expected]
    if stray:
        return (
            f"messages.{i}.content.0: unexpected `tool_use_id` found in `tool_result` blocks: {stray[0]}. "
            f"Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
        )
    missing = [e for e in expected if e not in results]
    if missing:
        return (
            f"messages.{i - 1}: `tool_use` ids were found without `tool_result` blocks immediately after: "
            f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block "
            f"in the next message."
        )
    return None


def _anthropic_messages_problem(messages: list[Any]) -> str | None:
    expected: list[str] = []
    seen_ids: set[str] = set()
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, Mapping) else None
        if role not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        if role != ("user" if i % 2 == 0 else "assistant"):
            return f'messages: roles must alternate between "user" and "assistant", starting with "user" (messages.{i})'
        final_prefill = role == "assistant" and i == len(messages) - 1 and message.get("content") in ("", [])
        blocks, problem = ([], None) if final_prefill else _content_blocks(message, i)
        if problem:
            return problem
        if role == "user":
            if problem := _tool_chain_problem(blocks, expected, i):
                return problem
            expected = []
            continue
        expected = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        if seen_ids.intersection(expected) or len(set(expected)) != len(expected):
            return f"messages.{i}: `tool_use` ids must be unique"
        seen_ids.update(expected)
    if expected:
        return _tool_chain_problem([], expected, len(messages))
    return None


def anthropic_problem(body: Mapping[str, Any]) -> str | None:
    """Why the Messages API would refuse ``body``; ``None`` when it would accept it."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        return "max_tokens: Field required (an integer >= 1)"
    system = body.get("system")
    if system is not None and not isinstance(system, str | list):
        return "system: Input should be a valid string or a list of text blocks"
    if "tools" in body and (problem := _anthropic_tools_problem(body["tools"])):
        return problem
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: Field required (at least one message)"
    return _anthropic_messages_problem(messages)

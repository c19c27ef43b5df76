"""Hypothesis strategies: OpenAI-format chat histories with tool calls and their results."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
ARGUMENTS = st.dictionaries(st.text(min_size=1, max_size=12), JSON_VALUES, max_size=4)
TOOL_NAMES = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_-]{0,20}", fullmatch=True)
WORDS = st.text(min_size=1, max_size=40).filter(lambda s: bool(s.strip()))
# Assistant text next to tool calls: often empty, sometimes blank (both are dropped for Anthropic).
SIDE_TEXT = st.none() | st.just("") | st.just(" \n") | WORDS
ID_SUFFIX = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=4, max_size=12)


@st.composite
def tool_calls(draw: st.DrawFn, step: int) -> list[dict[str, Any]]:
    """1-3 function calls with unique ids (the step number keeps them unique across a history)."""
    count = draw(st.integers(min_value=1, max_value=3))
    calls = []
    for k in range(count):
        arguments = draw(ARGUMENTS)
        calls.append(
            {
                "id": f"call_{step}_{k}_{draw(ID_SUFFIX)}",
                "type": "function",
                "function": {"name": draw(TOOL_NAMES), "arguments": json.dumps(arguments, ensure_ascii=False)},
            }
        )
    return calls


@st.composite
def assistant_messages(draw: st.DrawFn, step: int) -> dict[str, Any]:
    """An assistant message: a final text answer, or some side text plus 1-3 tool calls."""
    if draw(st.booleans()):
        return {"role": "assistant", "content": draw(WORDS)}
    return {"role": "assistant", "content": draw(SIDE_TEXT), "tool_calls": draw(tool_calls(step))}


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """system?, user, then steps of (assistant [+ the tool results, in any order]) and user turns.

    Ends where a model is asked: after a user message or after tool results.
    """
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(WORDS)})
    messages.append({"role": "user", "content": draw(WORDS)})
    for step in range(draw(st.integers(min_value=0, max_value=4))):
        assistant = draw(assistant_messages(step))
        messages.append(assistant)
        calls = assistant.get("tool_calls") or []
        for call in draw(st.permutations(calls)):
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": draw(st.text(max_size=30))})
        if not calls or draw(st.booleans()):
            messages.append({"role": "user", "content": draw(WORDS)})
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(WORDS)})  # a trailing plan message
    return messages

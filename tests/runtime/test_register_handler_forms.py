"""``registry.register(...)`` with a handler written like a tool: ``def add(a, b)`` for a schema with ``a`` and
``b`` is called with keyword arguments (not as ``add(args, ctx)``), a zero-argument handler is accepted, and a
handler whose parameters the schema cannot fill is refused at registration, naming the fix.

``register`` declares the ``(args, ctx)`` form only, so the other forms tried here carry ``type: ignore[arg-type]``."""

from __future__ import annotations

from typing import Any

import pytest

from milpa_chat import ToolContext, ToolRegistry
from milpa_chat.errors import DeclarationError

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}


async def test_a_handler_written_like_a_tool_gets_its_arguments_by_name() -> None:
    registry = ToolRegistry()

    def add(a: int, b: int) -> int:
        return a + b

    async def sub(b: int, a: int, ctx: ToolContext) -> dict[str, Any]:
        return {"difference": a - b, "by": ctx.principal}

    registry.register("add", "Add two numbers", SCHEMA, add, mutating=False)  # type: ignore[arg-type]
    registry.register("sub", "Subtract", SCHEMA, sub, mutating=False)  # type: ignore[arg-type]
    added = await registry.call("add", {"a": 2, "b": 3})
    assert added.success and added.data == 5, added
    taken = await registry.call("sub", {"a": 2, "b": 3}, ToolContext.cli())
    assert taken.success and taken.data == {"difference": -1, "by": "local-shell"}, taken


async def test_a_zero_argument_handler_is_accepted() -> None:
    registry = ToolRegistry()

    def ping() -> str:
        return "pong"

    registry.register("ping", "Answer pong", {"type": "object", "properties": {}}, ping, mutating=False)  # type: ignore[arg-type]
    result = await registry.call("ping", {})
    assert result.success and result.data == "pong", result


async def test_the_args_ctx_form_still_works() -> None:
    registry = ToolRegistry()
    registry.register("add", "Add", SCHEMA, lambda args, ctx: args["a"] + args["b"], mutating=False)
    assert (await registry.call("add", {"a": 1, "b": 1})).data == 2


def test_a_handler_the_schema_cannot_fill_is_refused_naming_the_fix() -> None:
    registry = ToolRegistry()

    def add(a: int, c: int) -> int:
        return a + c

    with pytest.raises(DeclarationError, match=r"takes c, which the input_schema's properties \(a, b\) do not give"):
        registry.register("add", "Add", SCHEMA, add)  # type: ignore[arg-type]

    def only_a(a: int) -> int:
        return a

    with pytest.raises(DeclarationError, match="has no parameter for the properties b"):
        registry.register("only_a", "A", SCHEMA, only_a)  # type: ignore[arg-type]


def test_a_zero_argument_generator_is_still_refused() -> None:
    def numbers():
        yield 1

    with pytest.raises(DeclarationError, match="generator function"):
        ToolRegistry().register("numbers", "Numbers", {"type": "object", "properties": {}}, numbers)  # type: ignore[arg-type]

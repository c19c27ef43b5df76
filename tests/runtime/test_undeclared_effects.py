"""Effects fail closed: a tool that does not say whether it changes things is treated as changing things
by every gate — confirmation on chat channels, the plan, the agent's catalogue, ``milpa-chat tools``."""

from __future__ import annotations

from typing import Any

import pytest

from milpa_chat import ToolContext, ToolRegistry, tool


class Tools:
    def __init__(self) -> None:
        self.dropped: list[str] = []

    @tool("drop_table", "Drop a table")  # says nothing about its effect
    def drop_table(self, name: str) -> dict[str, Any]:
        self.dropped.append(name)
        return {"dropped": name}

    @tool("count_rows", "Count the rows of a table", mutating=False)  # says it only reads
    def count_rows(self, name: str) -> dict[str, Any]:
        return {"rows": 3}


@pytest.fixture
def registry_and_tools() -> tuple[ToolRegistry, Tools]:
    tools = Tools()
    registry = ToolRegistry()
    registry.scan(tools)
    return registry, tools


async def test_an_undeclared_effect_asks_for_confirmation_on_telegram(registry_and_tools: Any) -> None:
    registry, tools = registry_and_tools
    alice = ToolContext.telegram(chat_id=1, user_id=1, scopes=[])
    asked = await registry.call("drop_table", {"name": "users"}, alice)
    assert asked.success and asked.data["requires_confirmation"] and tools.dropped == []
    read = await registry.call("count_rows", {"name": "users"}, alice)
    assert read.success and read.data == {"rows": 3}  # declared read-only: runs at once


async def test_the_plan_and_the_catalogue_say_it(registry_and_tools: Any) -> None:
    registry, _ = registry_and_tools
    plan = await registry.call("drop_table", {"name": "users"}, ToolContext.cli().as_plan())
    assert plan.data["plan"]["mutating"] is True and plan.data["plan"]["effect_declared"] is False
    summaries = {s["name"]: s["description"] for s in registry.get_tool_summaries()}
    assert "effect is not declared" in summaries["drop_table"]
    assert summaries["count_rows"] == "Count the rows of a table"
    definition = registry.get("drop_table")
    assert definition is not None and definition.mutating and not definition.effect_declared


def test_milpa_chat_tools_marks_it(capsys: pytest.CaptureFixture[str]) -> None:
    from milpa_chat.cli import main

    assert main(["tools", "tests.runtime.test_undeclared_effects:Tools"]) == 0
    out = capsys.readouterr().out
    assert "drop_table (effect undeclared: treated as mutating)" in out
    assert "count_rows\n" in out or "count_rows [" in out


def test_a_hand_registered_tool_fails_closed_too() -> None:
    registry = ToolRegistry()
    definition = registry.register("purge", "Purge the cache", {"type": "object"}, lambda args, ctx: None)
    assert definition.mutating and not definition.effect_declared
    reader = registry.register("peek", "Peek", {"type": "object"}, lambda args, ctx: None, mutating=False)
    assert not reader.mutating and reader.effect_declared

"""Payload limits are checked by the pipeline before anything reads the arguments."""

from __future__ import annotations

from typing import Any

from milpa_chat import ErrorCode, ToolContext, ToolRegistry, tool
from milpa_chat.runtime import PayloadLimits


class Tools:
    def __init__(self) -> None:
        self.seen: list[Any] = []

    @tool("store_blob", "Store a blob", mutating=True)
    def store_blob(self, blob: dict[str, Any]) -> dict[str, Any]:
        self.seen.append(blob)
        return {"ok": True}


async def test_a_payload_over_the_limits_is_a_validation_error_and_runs_nothing() -> None:
    tools = Tools()
    registry = ToolRegistry(limits=PayloadLimits(max_depth=8))
    registry.scan(tools)
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(10_000):
        node["x"] = {}
        node = node["x"]
    result = await registry.call("store_blob", {"blob": deep}, ToolContext.cli())
    assert result.code == ErrorCode.VALIDATION_ERROR and "PayloadLimits(max_depth" in (result.error or "")
    nan = await registry.call("store_blob", {"blob": {"v": float("nan")}, "confirm_token": "x"}, ToolContext.cli())
    assert nan.code == ErrorCode.VALIDATION_ERROR and tools.seen == []
    ok = await registry.call("store_blob", {"blob": {"a": [1, 2, {"b": "c"}]}}, ToolContext.cli())
    assert ok.success and tools.seen == [{"a": [1, 2, {"b": "c"}]}]

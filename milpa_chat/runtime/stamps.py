"""How every result of the pipeline is stamped: the meta keys each carries and the shape of a failure.

A leaf: the steps, the gates, the execute step and the registry all use it, and it uses none of them.
"""

from __future__ import annotations

import re
from time import perf_counter
from typing import TYPE_CHECKING, Any

from milpa_chat.runtime.result import ErrorCode, ToolResult

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext

__all__ = ["base_meta", "fail", "finish_meta", "tool_name"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def base_meta(tool: str, ctx: ToolContext, t0: float | None) -> dict[str, Any]:
    return {
        "tool": tool,
        "took_ms": 0.0 if t0 is None else round((perf_counter() - t0) * 1000, 3),
        "request_id": ctx.request_id,
        "channel": ctx.channel,
        "principal": ctx.principal,
    }


def fail(
    tool: str,
    ctx: ToolContext,
    t0: float | None,
    code: ErrorCode | str,
    message: str,
    data: Any = None,
    **meta: Any,
) -> ToolResult:
    m = base_meta(tool, ctx, t0)
    m["code"] = str(code)
    if meta:
        m.update(meta)
    m["type"] = "error"
    return ToolResult._of(False, data, None, message, m)  # m is fresh: the result takes it over


def finish_meta(result: ToolResult, tool: str, ctx: ToolContext, t0: float) -> ToolResult:
    """Add the registry's meta keys under the result's own (the result's keys win)."""
    return ToolResult(
        result.success,
        result.data,
        result.message,
        result.error,
        {**base_meta(tool, ctx, t0), **result.meta},
    )


def tool_name(name: object) -> str:
    """``name`` as results and logs show it: a tool name is a short string; anything else is named by its type."""
    if type(name) is not str:
        return f"<{type(name).__name__}>"
    if len(name) > 200 or not name.isprintable() or _SURROGATE.search(name):
        return ascii(name[:200])
    return name

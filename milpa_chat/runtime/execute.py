"""The execute step: the ``tool.executing`` anchor, the call itself, events and audit."""

from __future__ import annotations

import logging
from time import perf_counter
from typing import TYPE_CHECKING, Any

from milpa_chat._failpoints import failpoint
from milpa_chat.errors import ToolError
from milpa_chat.runtime.events import InterceptionSlot, ToolExecuted, ToolExecuting, ToolFailed
from milpa_chat.runtime.result import ErrorCode, ToolResult
from milpa_chat.runtime.stamps import base_meta, fail
from milpa_chat.store._hop import to_worker

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.definition import ToolDefinition
    from milpa_chat.runtime.services import Call, Services

log = logging.getLogger("milpa_chat.registry")

VETOED = "Tool execution vetoed by an event listener"


async def execute(call: Call) -> ToolResult:
    """The last step: ``tool.executing`` (may answer or veto) -> the tool -> ``tool.executed`` /
    ``tool.failed`` -> audit, for the validated arguments of ``call``."""
    services, tool, args, ctx, t0 = call.services, call.tool, call.validated, call.ctx, call.t0
    dispatcher = services.events
    if dispatcher.has_listeners("tool.executing"):
        intercepted = await _intercept(services, tool, args.wire, ctx, t0)
        if intercepted is not None:
            return intercepted
    failpoint("tool.started")
    t_exec = perf_counter()
    try:
        if tool.is_async:
            value = await tool.invoke(args.call, ctx)
        elif not tool.blocking:  # declared cheap: called on the loop, no worker-thread hop
            value = tool.invoke(args.call, ctx)
        else:
            value = await to_worker(tool.invoke, args.call, ctx)
    except ToolError as exc:
        result = fail(tool.name, ctx, t0, exc.code, str(exc), exc.data)
        return await _finish(services, tool, args.wire, ctx, result, False)
    except Exception as exc:
        return await _failed(services, tool, args.wire, ctx, t0, exc)
    exec_time = perf_counter() - t_exec
    result = _wrap(value, tool.name, ctx, t0)
    if exec_time > tool.timeout:
        result = result.with_meta(timeout_exceeded=True, execution_time=round(exec_time, 3), timeout_limit=tool.timeout)
    if dispatcher.has_listeners("tool.executed"):
        return await _finish(services, tool, args.wire, ctx, result, False)
    services.audit.executed(ctx, tool.name, args.wire, result)
    return result


_PLAIN = frozenset({int, str, float, bool, dict, list, type(None)})


def _wrap(value: Any, name: str, ctx: ToolContext, t0: float) -> ToolResult:
    if type(value) in _PLAIN:
        return ToolResult._of(True, value, None, None, base_meta(name, ctx, t0))
    if isinstance(value, ToolResult):
        return ToolResult(
            value.success, value.data, value.message, value.error, {**base_meta(name, ctx, t0), **value.meta}
        )
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        value = dump(mode="json")
    return ToolResult(True, value, None, None, base_meta(name, ctx, t0))


async def _finish(
    services: Services,
    tool: ToolDefinition,
    wire: dict[str, Any],
    ctx: ToolContext,
    result: ToolResult,
    cache_served: bool,
) -> ToolResult:
    if services.events.has_listeners("tool.executed"):
        await services.events.dispatch(
            "tool.executed", {"event": ToolExecuted(tool.name, ctx, wire, result, cache_served)}
        )
    services.audit.executed(ctx, tool.name, wire, result)
    return result


async def _failed(
    services: Services,
    tool: ToolDefinition,
    wire: dict[str, Any],
    ctx: ToolContext,
    t0: float,
    exc: Exception,
) -> ToolResult:
    took = (perf_counter() - t0) * 1000
    log.error("Tool %r raised %s (request %s)", tool.name, type(exc).__name__, ctx.request_id, exc_info=exc)
    if services.events.has_listeners("tool.failed"):
        await services.events.dispatch("tool.failed", {"event": ToolFailed(tool.name, ctx, wire, exc, took)})
    services.audit.failed(ctx, tool.name, wire, took)
    return fail(
        tool.name,
        ctx,
        t0,
        ErrorCode.INTERNAL_ERROR,
        f"Tool '{tool.name}' failed with an internal error (request {ctx.request_id}); "
        "the details are in the server log.",
    )


async def _intercept(
    services: Services, tool: ToolDefinition, wire: dict[str, Any], ctx: ToolContext, t0: float
) -> ToolResult | None:
    """Dispatch ``tool.executing``; a listener may answer for the tool or veto it."""
    slot = InterceptionSlot()
    try:
        await services.events.dispatch(
            "tool.executing", {"event": ToolExecuting(tool.name, ctx, wire), "slot": slot}, raise_errors=True
        )
    except Exception:
        log.exception("A tool.executing listener failed for %r; the tool was not run", tool.name)
        return fail(
            tool.name,
            ctx,
            t0,
            ErrorCode.INTERNAL_ERROR,
            f"A tool.executing listener failed; '{tool.name}' was not run (request {ctx.request_id}).",
        )
    if slot.has_result:
        return await _finish(services, tool, wire, ctx, _wrap(slot.result, tool.name, ctx, t0), True)
    if slot.stopped:
        return ToolResult.blocked(VETOED).with_meta(base_meta(tool.name, ctx, t0))
    return None

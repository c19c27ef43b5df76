"""How a hand-registered tool's handler is called: ``handler(args, ctx)``, or — written like a tool — with the
arguments as keywords (``def add(a: int, b: int)`` for a schema with properties ``a`` and ``b``), or with none
(``def ping()``). Decided once, at registration; a handler that fits none is a :class:`DeclarationError`."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from milpa_chat.errors import DeclarationError
from milpa_chat.runtime.signature import check_handler, is_async_callable

__all__ = ["handler_for"]

Handler = Callable[[dict[str, Any], Any], Any]
_KEYWORD_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
_CONTEXT = "ctx"


def handler_for(tool: str, handler: Any, schema: Mapping[str, Any]) -> Handler:
    """``handler`` as the pipeline calls it, ``call(args, ctx)``."""
    if not callable(handler) or inspect.isgeneratorfunction(handler) or inspect.isasyncgenfunction(handler):
        check_handler(tool, handler)  # raises, naming the fix
    try:
        params = list(inspect.signature(handler).parameters.values())
    except (TypeError, ValueError):  # a builtin without a readable signature: the (args, ctx) form
        check_handler(tool, handler)
        return handler  # type: ignore[no-any-return]
    if not params:
        return _adapt(handler, lambda args, ctx: ((), {}))
    properties = set(schema.get("properties") or {})
    named = [p for p in params if p.kind in _KEYWORD_KINDS]
    if not properties or not named or not any(p.name in properties for p in named):
        check_handler(tool, handler)  # the (args, ctx) form, or a clear error naming it
        return handler  # type: ignore[no-any-return]
    _check_keywords(tool, handler, params, properties)
    wants_ctx = any(p.name == _CONTEXT for p in named)
    return _adapt(handler, lambda args, ctx: ((), {**args, _CONTEXT: ctx} if wants_ctx else dict(args)))


def _check_keywords(tool: str, handler: Any, params: list[inspect.Parameter], properties: set[str]) -> None:
    """Every property can be passed, and every parameter without a default is a property (or ``ctx``)."""
    shown = f"{getattr(handler, '__qualname__', None) or handler!r}{inspect.signature(handler)}"
    unknown = [
        p.name
        for p in params
        if p.kind in _KEYWORD_KINDS
        and p.default is inspect.Parameter.empty
        and p.name not in properties
        and p.name != _CONTEXT
    ]
    positional_only = [p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_ONLY]
    if unknown or positional_only:
        names = unknown or positional_only
        raise DeclarationError(
            f"Tool {tool!r}: the handler {shown} takes {', '.join(names)}, which the input_schema's properties "
            f"({', '.join(sorted(properties))}) do not give; name its parameters after the properties (and "
            f"`ctx` for the ToolContext), or write it as `def handler(args, ctx)`"
        )
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        missing = sorted(properties - {p.name for p in params})
        if missing:
            raise DeclarationError(
                f"Tool {tool!r}: the handler {shown} has no parameter for the properties {', '.join(missing)} of its "
                f"input_schema, so a call giving them would fail; add them (or **kwargs), or drop them from the "
                f"schema"
            )


def _adapt(handler: Any, arguments: Callable[[dict[str, Any], Any], tuple[tuple[Any, ...], dict[str, Any]]]) -> Handler:
    if is_async_callable(handler):

        async def call_async(args: dict[str, Any], ctx: Any) -> Any:
            positional, keywords = arguments(args, ctx)
            return await handler(*positional, **keywords)

        call_async.__qualname__ = getattr(handler, "__qualname__", "handler")
        return call_async

    def call(args: dict[str, Any], ctx: Any) -> Any:
        positional, keywords = arguments(args, ctx)
        return handler(*positional, **keywords)

    call.__qualname__ = getattr(handler, "__qualname__", "handler")
    return call

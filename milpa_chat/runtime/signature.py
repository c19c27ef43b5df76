"""Read a tool function's signature: its schema parameters, the context parameter, ``self``.

Used by ``@tool`` at decoration time; every problem is a :class:`DeclarationError` that names
the parameter and the fix.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, get_args, get_origin

from milpa_chat.errors import DeclarationError
from milpa_chat.runtime.params import Param, ParamSpec
from milpa_chat.runtime.tool_options import check_argument_name

__all__ = ["Analysis", "analyse", "check_handler", "is_async_callable"]

_EMPTY = inspect.Parameter.empty
_Annotated: Any = Annotated  # used with run-time values
_KEYWORD_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


@dataclass(frozen=True, slots=True)
class Analysis:
    specs: list[ParamSpec]
    receiver: bool
    context_param: str | None
    returns: Any


def _layers(function: Any) -> Iterator[Any]:
    """``function`` and what it wraps: ``functools.wraps`` chains, partials, ``__call__``."""
    current = function
    for _ in range(100):
        yield current
        if isinstance(current, functools.partial):
            current = current.func
        elif getattr(current, "__wrapped__", None) is not None:
            current = current.__wrapped__
        elif callable(current) and not inspect.isroutine(current) and not isinstance(current, type):
            current = type(current).__call__
        else:
            return


def is_async_callable(function: Any) -> bool:
    """True for coroutine functions, also behind ``functools.wraps``/``partial``/``__call__``."""
    return any(inspect.iscoroutinefunction(layer) for layer in _layers(function))


def _is_generator(function: Any) -> bool:
    return any(inspect.isgeneratorfunction(f) or inspect.isasyncgenfunction(f) for f in _layers(function))


def check_handler(tool: str, handler: Any) -> None:
    """Raise :class:`DeclarationError` unless ``handler(args, ctx)`` can be called (hand-registered tools)."""
    if not callable(handler):
        raise DeclarationError(
            f"Tool {tool!r}: the handler must be callable as handler(args, ctx), got {handler!r}; pass the "
            f"function itself, not the result of calling it"
        )
    if _is_generator(handler):
        raise DeclarationError(
            f"Tool {tool!r}: the handler is a generator function; a tool returns one value: collect the items "
            f"into a list and return it"
        )
    try:
        signature = inspect.signature(handler)
    except (TypeError, ValueError):  # a builtin without a readable signature: trust it
        return
    try:
        signature.bind(None, None)
    except TypeError:
        shown = getattr(handler, "__qualname__", None) or repr(handler)
        bare = signature.replace(
            parameters=[p.replace(annotation=_EMPTY) for p in signature.parameters.values()], return_annotation=_EMPTY
        )
        raise DeclarationError(
            f"Tool {tool!r}: the handler {shown}{bare} cannot be called as handler(args, ctx); a "
            f"hand-registered tool's handler takes two positional arguments, the validated arguments (a dict) "
            f"and the ToolContext: `def handler(args, ctx): ...` (or `lambda args, ctx: ...`). To derive the "
            f"schema from a function's own parameters, decorate it with @tool and use registry.scan(...)"
        ) from None


def _where(tool: str, name: str) -> str:
    return f"@tool {tool!r}, parameter {name!r}"


def _globals(function: Any) -> dict[str, Any]:
    for layer in reversed(list(_layers(function))):
        found = getattr(layer, "__globals__", None)
        if isinstance(found, dict):
            return found
    return {}


def _resolve(tool: str, pname: str, annotation: Any, namespace: dict[str, Any]) -> Any:
    shim = lambda: None  # noqa: E731 - a carrier for one annotation
    shim.__annotations__ = {"value": annotation}
    try:
        return typing.get_type_hints(shim, globalns=namespace, include_extras=True)["value"]
    except Exception as exc:
        raise DeclarationError(
            f"{_where(tool, pname)}: cannot resolve the annotation {annotation!r} ({exc}); define or import "
            f"that name at module level, above the tool"
        ) from None


def _hints(tool: str, function: Any, signature: inspect.Signature) -> dict[str, Any]:
    try:
        return typing.get_type_hints(function, include_extras=True)
    except Exception:  # resolve one by one to name the culprit; the return type is optional
        namespace = _globals(function)
    hints = {
        name: _resolve(tool, name, p.annotation, namespace)
        for name, p in signature.parameters.items()
        if p.annotation is not _EMPTY
    }
    if signature.return_annotation is not _EMPTY:
        with contextlib.suppress(DeclarationError):
            hints["return"] = _resolve(tool, "return", signature.return_annotation, namespace)
    return hints


def _looks_like_method(function: Any, params: list[inspect.Parameter]) -> bool:
    """Defined in a class body, with a first parameter that is ``self``/``cls`` or unannotated."""
    parts = str(getattr(function, "__qualname__", "")).split(".")
    if len(parts) < 2 or parts[-2] == "<locals>" or not params:
        return False
    first = params[0]
    if first.kind not in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
        return False
    return first.name in ("self", "cls") or first.annotation is _EMPTY


def _is_context(annotation: Any) -> bool:
    from milpa_chat.runtime.context import ToolContext

    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    options = [a for a in get_args(annotation) if a is not type(None)] if get_origin(annotation) else [annotation]
    return len(options) == 1 and isinstance(options[0], type) and issubclass(options[0], ToolContext)


def _check_kind(tool: str, p: inspect.Parameter) -> None:
    if p.kind is inspect.Parameter.VAR_POSITIONAL or p.kind is inspect.Parameter.VAR_KEYWORD:
        star = "*" if p.kind is inspect.Parameter.VAR_POSITIONAL else "**"
        raise DeclarationError(
            f"{_where(tool, star + p.name)}: tools take named arguments only; replace {star}{p.name} with one "
            f"named, annotated parameter per argument (use a `dict` parameter for free-form objects)"
        )
    if p.kind is inspect.Parameter.POSITIONAL_ONLY:
        raise DeclarationError(
            f"{_where(tool, p.name)}: positional-only parameters cannot be passed by name; remove the `/` "
            f"from the signature"
        )


def _contains_param(annotation: Any) -> bool:
    if get_origin(annotation) is Annotated and any(isinstance(m, Param) for m in annotation.__metadata__):
        return True
    return any(_contains_param(a) for a in get_args(annotation))


def _spec(tool: str, p: inspect.Parameter, annotation: Any, doc: str | None) -> ParamSpec:
    from pydantic.fields import FieldInfo
    from pydantic_core import PydanticUndefined

    base, metadata = annotation, tuple[Any, ...]()
    if get_origin(annotation) is Annotated:
        base, metadata = annotation.__origin__, annotation.__metadata__
    params = [m for m in metadata if isinstance(m, Param)]
    others = tuple(m for m in metadata if not isinstance(m, Param))
    if len(params) > 1 or _contains_param(base):
        raise DeclarationError(
            f"{_where(tool, p.name)}: use one Param, on the outside: Annotated[int | None, Param('...')]"
        )
    for m in others:
        if isinstance(m, FieldInfo) and (m.default is not PydanticUndefined or m.default_factory is not None):
            raise DeclarationError(
                f"{_where(tool, p.name)}: give the default in the signature (`{p.name}: ... = value`), "
                f"not in Field(default=...)"
            )
    param = params[0] if params else None
    return ParamSpec(
        name=p.name,
        annotation=_Annotated[(base, *others)] if others else base,
        default=p.default,
        description=(param.description if param and param.description else doc),
        clamp=param.clamp if param else None,
        shape=param.object_schema() if param and param.object_shaped else None,
        examples=param.examples if param else None,
    )


def analyse(tool: str, function: Callable[..., Any], receiver: bool | None, docs: dict[str, str]) -> Analysis:
    """The schema parameters, the receiver flag and the context parameter of ``function``."""
    if _is_generator(function):
        raise DeclarationError(
            f"Tool {tool!r} is a generator function; a tool returns one value: collect the items into a "
            f"list and return it"
        )
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as exc:
        raise DeclarationError(f"Tool {tool!r}: cannot read the signature of {function!r} ({exc})") from None
    hints = _hints(tool, function, signature)
    params = list(signature.parameters.values())
    if receiver is None:
        receiver = _looks_like_method(function, params)
    if receiver:
        params = params[1:]
    specs, context = [], None
    for p in params:
        _check_kind(tool, p)
        check_argument_name(_where(tool, p.name), p.name)
        if p.name not in hints:
            raise DeclarationError(
                f"{_where(tool, p.name)} has no type annotation; annotate it (e.g. `{p.name}: str`) so a "
                f"schema can be derived"
            )
        if _is_context(hints[p.name]):
            if context is not None:
                raise DeclarationError(
                    f"{_where(tool, p.name)}: only one parameter may receive the ToolContext "
                    f"({context!r} already does); remove one"
                )
            context = p.name
            continue
        specs.append(_spec(tool, p, hints[p.name], docs.get(p.name)))
    return Analysis(specs, receiver, context, hints.get("return", _EMPTY))

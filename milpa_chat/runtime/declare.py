"""``@tool`` and ``Param``: declare tools with type hints; :func:`definitions_from` binds them.

Everything is derived and compiled when the decorator runs, so a bad declaration raises
:class:`~milpa_chat.errors.DeclarationError` at import time, naming the parameter and the fix.
pydantic is imported on first use, not when this module is imported.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar, overload

from milpa_chat.errors import DeclarationError
from milpa_chat.runtime.definition import ArgumentsValidator, ToolDefinition, VerifyPolicy
from milpa_chat.runtime.params import Param
from milpa_chat.runtime.schema import definition_from_schema
from milpa_chat.runtime.signature import analyse, is_async_callable
from milpa_chat.runtime.tool_options import TOOL_NAME, ToolOptions, tool_options

__all__ = ["Param", "ToolDeclaration", "definition_from_schema", "definitions_from", "tool"]

#: The attribute ``@tool`` sets on the decorated function.
ATTRIBUTE = "__milpa_tool__"

F = TypeVar("F", bound="Callable[..., Any] | staticmethod[..., Any] | classmethod[Any, ..., Any]")


@dataclass(frozen=True, slots=True)
class ToolDeclaration:
    """What ``@tool`` derived from a function (attached to it as ``__milpa_tool__``).

    ``receiver`` says the first parameter (``self``/``cls``) is bound by :func:`definitions_from`;
    ``context_param`` names the parameter that receives the :class:`ToolContext`, if any.
    """

    name: str
    description: str
    function: Callable[..., Any]
    input_schema: dict[str, Any]
    validator: ArgumentsValidator
    output_schema: dict[str, Any] | None
    is_async: bool
    receiver: bool
    context_param: str | None
    options: ToolOptions

    def definition(self, target: Callable[..., Any] | None = None) -> ToolDefinition:
        """The :class:`ToolDefinition` calling ``target`` (the function, or a bound method of it)."""
        if target is None and self.receiver:
            raise DeclarationError(
                f"Tool {self.name!r} is a method ({self.function.__qualname__}); bind it to an object: "
                f"definitions_from(instance) or definitions_from(instance.{self.function.__name__})"
            )
        call: Callable[..., Any] = self.function if target is None else target
        return _definition(self, call)


def _definition(decl: ToolDeclaration, call: Callable[..., Any]) -> ToolDefinition:
    ctx_name = decl.context_param
    if ctx_name is None:

        def invoke(args: dict[str, Any], ctx: Any) -> Any:
            return call(**args)
    else:

        def invoke(args: dict[str, Any], ctx: Any) -> Any:
            return call(**args, **{ctx_name: ctx})

    o = decl.options
    return ToolDefinition(
        name=decl.name,
        description=decl.description,
        input_schema=copy.deepcopy(decl.input_schema),
        validator=decl.validator,
        invoke=invoke,
        is_async=decl.is_async,
        scopes=o.scopes,
        mutating=o.mutating is not False,
        effect_declared=o.mutating is not None,
        confirm=o.confirm,
        timeout=o.timeout,
        version=o.version,
        output_schema=copy.deepcopy(decl.output_schema),
        verify=o.verify,
        tags=o.tags,
        blocking=o.blocking,
        extra={
            "qualname": getattr(decl.function, "__qualname__", decl.name),
            "module": getattr(decl.function, "__module__", None),
        },
    )


# ----------------------------------------------------------------------------------- @tool
@overload
def tool(name: F, /) -> F: ...


@overload
def tool(
    name: str | None = None,
    description: str | None = None,
    *,
    scopes: Iterable[str] = (),
    mutating: bool | None = None,
    confirm: bool = False,
    timeout: float = 30.0,
    version: str | None = None,
    verify: VerifyPolicy | None = None,
    tags: Iterable[str] = (),
    blocking: bool = True,
) -> Callable[[F], F]: ...


def tool(
    name: Any = None,
    description: str | None = None,
    *,
    scopes: Iterable[str] = (),
    mutating: bool | None = None,
    confirm: bool = False,
    timeout: float = 30.0,
    version: str | None = None,
    verify: VerifyPolicy | None = None,
    tags: Iterable[str] = (),
    blocking: bool = True,
) -> Any:
    """Declare a function or method as a tool; works bare (``@tool``) or called (``@tool("name", ...)``).

    The name defaults to the function name, the description to the docstring's first paragraph.
    The function is returned unchanged, with a :class:`ToolDeclaration` as ``__milpa_tool__``.
    A ``def`` tool runs on a worker thread, so a slow one never stalls the event loop; ``blocking=False``
    runs it on the loop itself (no thread hop), for a function that returns in microseconds and never waits.
    """
    settings = dict(
        scopes=scopes, mutating=mutating, confirm=confirm, timeout=timeout, version=version, verify=verify, tags=tags,
        blocking=blocking,
    )  # fmt: skip
    if callable(name) or isinstance(name, staticmethod | classmethod):
        return _decorate(name, tool_options(None, description, **settings))
    options = tool_options(name, description, **settings)
    return lambda obj: _decorate(obj, options)


def _decorate(obj: Any, options: ToolOptions) -> Any:
    receiver: bool | None = None
    function = obj
    if isinstance(obj, staticmethod | classmethod):
        function, receiver = obj.__func__, isinstance(obj, classmethod)
    if isinstance(function, type) or not callable(function):
        raise DeclarationError(f"@tool decorates functions and methods, not {function!r}")
    declaration = _declare(function, options, receiver)
    try:
        setattr(function, ATTRIBUTE, declaration)
    except AttributeError:
        raise DeclarationError(
            f"@tool cannot mark {function!r}: decorate the function where it is defined (not a bound method)"
        ) from None
    return obj


def _declare(function: Callable[..., Any], options: ToolOptions, receiver: bool | None) -> ToolDeclaration:
    from milpa_chat.runtime.docstrings import parse_docstring
    from milpa_chat.runtime.schema_derive import derive_arguments, derive_output_schema

    name = options.name or getattr(function, "__name__", None)
    if not name or not TOOL_NAME.match(name):
        raise DeclarationError(
            f"@tool cannot use {name!r} as the tool name for {function!r}; pass a name: @tool('my_tool', ...)"
        )
    summary, param_docs = parse_docstring(function)
    description = options.description or summary
    if not description:
        raise DeclarationError(
            f"Tool {name!r} has no description; pass one (@tool({name!r}, 'What it does')) or give "
            f"{getattr(function, '__qualname__', name)} a docstring"
        )
    if not options.blocking and is_async_callable(function):
        raise DeclarationError(
            f"Tool {name!r}: blocking=False is for a `def` tool (it then runs on the event loop); "
            f"{getattr(function, '__qualname__', name)} is `async def`, which always runs on the loop: "
            f"drop blocking=False"
        )
    found = analyse(name, function, receiver, param_docs)
    input_schema, validator = derive_arguments(name, found.specs)
    return ToolDeclaration(
        name=name,
        description=description,
        function=function,
        input_schema=input_schema,
        validator=validator,
        output_schema=derive_output_schema(found.returns),
        is_async=is_async_callable(function),
        receiver=found.receiver,
        context_param=found.context_param,
        options=options,
    )


# -------------------------------------------------------------------------------- scanning
def declaration_of(obj: Any) -> ToolDeclaration | None:
    """The :class:`ToolDeclaration` of a decorated function, method, staticmethod or classmethod."""
    if isinstance(obj, staticmethod | classmethod):
        obj = obj.__func__
    try:
        found = getattr(obj, ATTRIBUTE, None)
    except Exception:  # objects whose __getattr__ misbehaves are not tools
        return None
    return found if isinstance(found, ToolDeclaration) else None


def definitions_from(obj: object) -> list[ToolDefinition]:
    """Every tool declared on ``obj`` (a module, a class, an instance, or one decorated callable).

    Methods are bound to ``obj`` (``self`` for instances, ``cls`` for classmethods); names that
    start with ``_`` are skipped even when decorated. For a module, only tools defined in that
    module count (not ones it imports). The order is the definition order in the source.
    """
    if isinstance(obj, ModuleType):
        found = [
            (attr, value)
            for attr, value in vars(obj).items()
            if not attr.startswith("_") and getattr(value, "__module__", None) == obj.__name__
        ]
    elif not isinstance(obj, type) and declaration_of(obj) is not None:
        found = [(getattr(obj, "__name__", "tool"), obj)]
    else:
        found = _members(obj)
    definitions = []
    for attr, value in found:
        declaration = declaration_of(value)
        if declaration is not None:
            definitions.append(_bind(declaration, attr, value))
    _unique(definitions)
    return definitions


def _members(obj: object) -> list[tuple[str, Any]]:
    cls = obj if isinstance(obj, type) else type(obj)
    names: dict[str, None] = {}
    for klass in reversed(cls.__mro__):
        if klass is not object:
            names.update(dict.fromkeys(vars(klass)))
    members = []
    for attr in names:
        if attr.startswith("_") or declaration_of(inspect.getattr_static(cls, attr)) is None:
            continue
        members.append((attr, getattr(obj, attr)))
    return members


def _bind(declaration: ToolDeclaration, attr: str, value: Any) -> ToolDefinition:
    bound = inspect.ismethod(value)
    if bound and not declaration.receiver:
        raise DeclarationError(
            f"Tool {declaration.name!r} ({attr}) is a method, but its first parameter was taken for a tool "
            f"argument; name the first parameter `self` (or `cls`), or make it a @staticmethod"
        )
    if not bound and declaration.receiver:
        raise DeclarationError(
            f"Tool {declaration.name!r} ({attr}) is an instance method; pass an instance, "
            f"e.g. definitions_from(MyTools()), or make it a @staticmethod/@classmethod"
        )
    return declaration.definition(value if bound else declaration.function)


def _unique(definitions: list[ToolDefinition]) -> None:
    seen: dict[str, str] = {}
    for definition in definitions:
        where = str(definition.extra.get("qualname"))
        if definition.name in seen:
            raise DeclarationError(
                f"Two tools are named {definition.name!r} ({seen[definition.name]} and {where}); "
                f"tool names must be unique, rename one (the first argument of @tool)"
            )
        seen[definition.name] = where

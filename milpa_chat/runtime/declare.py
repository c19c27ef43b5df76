"""``@tool`` and ``Param``: declare tools with type hints; :func:`definitions_from` binds them.

Everything is derived and compiled when the decorator runs, so a bad declaration raises
:class:`~milpa_chat.errors.DeclarationError` at import time, naming the parameter and the fix.
pydantic is imported on first use, not when this module is imported.
"""

from __future__ import annotations

import copy
import inspect
import math
from collections.abc import Callable, Iterable
from dataclasses import KW_ONLY, dataclass
from types import ModuleType
from typing import Any, TypeVar, overload

from milpa_chat.errors import DeclarationError
from milpa_chat.runtime.definition import ArgumentsValidator, ToolDefinition, VerifyPolicy
from milpa_chat.runtime.schema import definition_from_schema
from milpa_chat.runtime.signature import analyse, is_async_callable
from milpa_chat.runtime.tool_options import TOOL_NAME, ToolOptions, tool_options

__all__ = ["Param", "ToolDeclaration", "definition_from_schema", "definitions_from", "tool"]

#: The attribute ``@tool`` sets on the decorated function.
ATTRIBUTE = "__milpa_tool__"

F = TypeVar("F", bound="Callable[..., Any] | staticmethod[..., Any] | classmethod[Any, ..., Any]")


@dataclass(frozen=True, slots=True)
class Param:
    """Describes one parameter: ``Annotated[int, Param("Page number", clamp=(1, 1000))]``.

    ``clamp=(low, high)`` moves an out-of-range number into the range (it never rejects) and
    the schema advertises ``minimum``/``maximum``; for bounds that reject, use
    ``Annotated[int, Field(ge=1, le=10)]``. ``type="object"`` (or ``properties=``/
    ``required_properties=``) declares an object-shaped ``dict`` parameter, open when
    ``properties`` is omitted and closed (``additionalProperties: false``) when given.
    ``examples`` go into the schema.
    """

    description: str = ""
    _: KW_ONLY
    clamp: tuple[float, float] | None = None
    type: str | None = None
    properties: dict[str, Any] | None = None
    required_properties: list[str] | None = None
    examples: list[Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.description, str):
            raise DeclarationError(f"Param(description=...) must be a string, got {self.description!r}")
        if self.clamp is not None:
            object.__setattr__(self, "clamp", _clamp(self.clamp))
        if self.type not in (None, "object"):
            raise DeclarationError(
                f"Param(type={self.type!r}) is not supported: only type='object' (an object-shaped dict "
                f"parameter) can be given; every other type comes from the annotation"
            )
        if self.properties is not None and not (
            isinstance(self.properties, dict) and all(isinstance(v, dict) for v in self.properties.values())
        ):
            raise DeclarationError(
                "Param(properties=...) must map property names to JSON schemas, e.g. {'title': {'type': 'string'}}"
            )
        self._check_required()
        if self.examples is not None and not isinstance(self.examples, list):
            raise DeclarationError(f"Param(examples=...) must be a list of example values, got {self.examples!r}")

    def _check_required(self) -> None:
        required = self.required_properties
        if required is None:
            return
        if isinstance(required, str) or not all(isinstance(r, str) for r in required):
            raise DeclarationError(f"Param(required_properties=...) must be a list of names, got {required!r}")
        unknown = [r for r in required if self.properties is not None and r not in self.properties]
        if unknown:
            raise DeclarationError(
                f"Param(required_properties=...) names {unknown} that are not in properties "
                f"({', '.join(self.properties or {})}); add them to properties or remove them"
            )

    @property
    def object_shaped(self) -> bool:
        return self.type == "object" or self.properties is not None or self.required_properties is not None

    def object_schema(self) -> dict[str, Any]:
        """The JSON Schema of an object-shaped parameter."""
        schema: dict[str, Any] = {"type": "object"}
        if self.properties is not None:
            schema["properties"] = copy.deepcopy(self.properties)
        if self.required_properties:
            schema["required"] = list(self.required_properties)
        if self.properties is not None:
            schema["additionalProperties"] = False
        return schema


def _clamp(value: Any) -> tuple[float, float]:
    ok = isinstance(value, tuple | list) and len(value) == 2
    ok = ok and all(isinstance(b, int | float) and not isinstance(b, bool) and math.isfinite(b) for b in value)
    if not ok or value[0] > value[1]:
        raise DeclarationError(
            f"Param(clamp={value!r}) must be a pair of finite numbers (low, high) with low <= high, "
            f"e.g. clamp=(1, 1000)"
        )
    return (value[0], value[1])


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
        mutating=o.mutating,
        confirm=o.confirm,
        timeout=o.timeout,
        version=o.version,
        output_schema=copy.deepcopy(decl.output_schema),
        verify=o.verify,
        tags=o.tags,
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
    mutating: bool = False,
    confirm: bool = False,
    timeout: float = 30.0,
    version: str | None = None,
    verify: VerifyPolicy | None = None,
    tags: Iterable[str] = (),
) -> Callable[[F], F]: ...


def tool(
    name: Any = None,
    description: str | None = None,
    *,
    scopes: Iterable[str] = (),
    mutating: bool = False,
    confirm: bool = False,
    timeout: float = 30.0,
    version: str | None = None,
    verify: VerifyPolicy | None = None,
    tags: Iterable[str] = (),
) -> Any:
    """Declare a function or method as a tool; works bare (``@tool``) or called (``@tool("name", ...)``).

    The name defaults to the function name, the description to the docstring's first paragraph.
    The function is returned unchanged, with a :class:`ToolDeclaration` as ``__milpa_tool__``.
    """
    settings = dict(
        scopes=scopes, mutating=mutating, confirm=confirm, timeout=timeout, version=version, verify=verify, tags=tags
    )
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

"""Declared operations: a class whose constructor is the input contract and whose ``run()`` is the handler.

``declared_operation(PublishPost, resolve=container.get)`` reads the markers once and returns the same
:class:`~milpa_chat.command.Operation` the hand-written form builds: this module reads the class into
:class:`DeclaredParts` (the constructor arguments of that operation), and
:meth:`Operation.from_class <milpa_chat.command.Operation.from_class>` builds it. Every refusal
happens here, once, in that order, saying what to declare — above all a class that declares neither
``@Mutates`` nor ``@Reads``: silence would ship as "does not mutate", and every consumer would
believe it. The handler it returns closes over plain data: an invocation pays for no reflection.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any

from milpa_chat.command.context import InvocationContext
from milpa_chat.command.declaration import (
    Because,
    MutatesDeclaration,
    NeedsDeclaration,
    OperationDeclaration,
    ReadsDeclaration,
    TargetMarker,
    declarations_of,
)
from milpa_chat.command.errors import InvalidInput, OperationDeclarationError
from milpa_chat.command.hints import Convert, describe, enum_to_wire, output_schema, split_annotated, strip_optional

__all__ = ["SOURCE_ATTRIBUTE", "DeclaredParts", "Resolver", "is_declared", "read_declared"]

#: Finds a collaborator of ``run()`` by its type: ``resolve(Posts) -> Posts instance``.
Resolver = Callable[[type], object]
_EMPTY = inspect.Parameter.empty

#: The attribute a generated handler carries to name the source its digest is taken from.
SOURCE_ATTRIBUTE = "__milpa_source__"


@dataclasses.dataclass(frozen=True, slots=True)
class DeclaredParts:
    """What a declared class says, as the arguments of the :class:`~milpa_chat.command.Operation` it is."""

    name: str
    description: str
    handler: Callable[..., Any]
    options: Mapping[str, Any]


@dataclasses.dataclass(frozen=True, slots=True)
class _Input:
    name: str
    schema: dict[str, Any]
    required: bool
    convert: Convert
    target: bool


@dataclasses.dataclass(frozen=True, slots=True)
class _RunParam:
    name: str
    collaborator: type | None  # None: the InvocationContext


def is_declared(target: object) -> bool:
    """Whether ``target`` is a class carrying ``@operation(...)``."""
    return isinstance(target, type) and "operation" in declarations_of(target)


def _load(target: type | str) -> type:
    if isinstance(target, type):
        return target
    if isinstance(target, str):
        module, _, qualname = target.partition(":") if ":" in target else target.rpartition(".")
        try:
            found: Any = importlib.import_module(module)
            for part in qualname.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError, ValueError):
            found = None
        if isinstance(found, type):
            return found
    raise OperationDeclarationError(
        f"{target!r}: the class does not exist; pass the class, or 'package.module:ClassName'"
    )


def _hints(cls: type, function: Any, where: str) -> dict[str, Any]:
    try:
        return typing.get_type_hints(function, include_extras=True)
    except Exception as exc:  # NameError for a name defined inside a function, ...
        raise OperationDeclarationError(
            f"{cls.__qualname__}: the type hints of {where} cannot be resolved ({type(exc).__name__}: {exc}); "
            f"define the types they name at module level"
        ) from None


def _init_hints(cls: type) -> dict[str, Any]:
    """The constructor's hints; the class's own annotations fill in (models whose __init__ takes **data)."""
    init = next(k.__dict__["__init__"] for k in cls.__mro__ if "__init__" in k.__dict__)
    hints = {} if init is object.__init__ else _hints(cls, init, "__init__")
    try:
        fields = typing.get_type_hints(cls, include_extras=True)
    except Exception:
        fields = {}
    return {**fields, **hints}


def _defaults(cls: type) -> dict[str, Any]:
    if not dataclasses.is_dataclass(cls):
        return {}
    fields = dataclasses.fields(cls)
    return {f.name: f.default_factory() for f in fields if f.default_factory is not dataclasses.MISSING}


def _wire_default(where: str, value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return enum_to_wire(value)
    if isinstance(value, tuple):
        value = list(value)
    try:
        import json

        json.dumps(value)
    except (TypeError, ValueError):
        raise OperationDeclarationError(f"{where} has a default that is not JSON ({value!r}); use one") from None
    return value


def _inputs(cls: type) -> list[_Input]:
    try:
        params = list(inspect.signature(cls).parameters.values())
    except (TypeError, ValueError):
        params = []
    hints, factories = _init_hints(cls), _defaults(cls)
    inputs: list[_Input] = []
    targets: list[str] = []
    for p in params:
        where = f"{cls.__qualname__}: parameter {p.name}"
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
            raise OperationDeclarationError(f"{where} has no single type: declare each input as a named parameter")
        base, metadata = split_annotated(hints.get(p.name, _EMPTY))
        described = describe(where, base)
        schema = dict(described.schema)
        because = [m.purpose for m in metadata if isinstance(m, Because)]
        if because:
            schema["description"] = because[0]
        default = factories.get(p.name, p.default)
        if default is not _EMPTY:
            schema["default"] = _wire_default(where, default)
        if any(isinstance(m, TargetMarker) for m in metadata):
            targets.append(p.name)
            if len(targets) == 2:
                raise OperationDeclarationError(
                    f"{cls.__qualname__} marks two parameters with Target ({targets[0]} and {targets[1]}); "
                    f"an operation names at most one target: keep one"
                )
        is_target = bool(targets) and targets[-1] == p.name
        inputs.append(_Input(p.name, schema, default is _EMPTY, described.convert, is_target))
    return inputs


def _is_context(hint: Any) -> tuple[bool, bool]:
    """(is it the InvocationContext, is it nullable)."""
    members, nullable = strip_optional(hint)
    return members == [InvocationContext], nullable


def _run_params(cls: type, run: Any) -> list[_RunParam]:
    hints = _hints(cls, run, "run()")
    found: list[_RunParam] = []
    for p in list(inspect.signature(run).parameters.values())[1:]:
        base, _ = split_annotated(hints.get(p.name, _EMPTY))
        is_context, nullable = _is_context(base)
        if is_context:
            if not nullable:
                raise OperationDeclarationError(
                    f"{cls.__qualname__}.run() takes {p.name}: InvocationContext, which must be nullable "
                    f"(`{p.name}: InvocationContext | None = None`): a surface that attributes nothing passes None"
                )
            found.append(_RunParam(p.name, None))
            continue
        collaborator = p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and isinstance(base, type)
        if not collaborator or base.__module__ == "builtins" or typing.get_origin(base) is not None:
            raise OperationDeclarationError(
                f"{cls.__qualname__}.run() takes {p.name}, which is not a collaborator: inputs belong to the "
                f"constructor; run() takes only collaborators (classes the resolver provides) and the "
                f"InvocationContext"
            )
        found.append(_RunParam(p.name, base))
    return found


def _refuse_effects(cls: type, found: Mapping[str, Any]) -> None:
    name = cls.__qualname__
    if "Mutates" in found and "Reads" in found:
        raise OperationDeclarationError(
            f"{name} declares BOTH @Mutates and @Reads; an operation either changes something or it does not: keep one"
        )
    if "Mutates" not in found and "Reads" not in found:
        raise OperationDeclarationError(
            f"{name} declares neither @Mutates nor @Reads. Silence would ship as 'does not mutate' and every "
            f"consumer would believe it: declare what it changes, e.g. @Mutates(Mutation.PERSISTENT, ...), "
            f"or @Reads if it only reads"
        )


def _run_of(cls: type) -> Any:
    run = inspect.getattr_static(cls, "run", None)
    if not inspect.isfunction(run):
        raise OperationDeclarationError(
            f"{cls.__qualname__} has no public run(): define `def run(self, ...)` — its collaborators are "
            f"resolved per call and its return type declares the output"
        )
    return run


def read_declared(target: type | str, resolve: Resolver | None = None) -> DeclaredParts:
    """What the declared class ``target`` says; ``resolve(type)`` provides ``run()``'s collaborators.

    Raises :class:`~milpa_chat.command.OperationDeclarationError` saying what to declare.
    """
    cls = _load(target)
    found = declarations_of(cls)
    declared: OperationDeclaration | None = found.get("operation")
    if declared is None:
        raise OperationDeclarationError(
            f"{cls.__qualname__} is not a declared operation: add @operation('name', 'What it does.') to it"
        )
    _refuse_effects(cls, found)
    run = _run_of(cls)
    inputs = _inputs(cls)
    run_params = _run_params(cls, run)
    needed = [p.collaborator.__qualname__ for p in run_params if p.collaborator is not None]
    if needed and resolve is None:
        raise OperationDeclarationError(
            f"{cls.__qualname__}.run() needs {', '.join(needed)} but no resolver was given: pass "
            f"resolve=lambda kind: ... (e.g. your container's get)"
        )
    return _build(cls, declared, found, inputs, run, run_params, resolve)


def _input_schema(inputs: list[_Input]) -> dict[str, Any] | None:
    if not inputs:
        return None
    schema: dict[str, Any] = {"type": "object"}
    required = [i.name for i in inputs if i.required]
    if required:
        schema["required"] = required
    schema["properties"] = {i.name: i.schema for i in inputs}
    return schema


def _build(
    cls: type, declared: OperationDeclaration, found: Mapping[str, Any], inputs: list[_Input], run: Any,
    run_params: list[_RunParam], resolve: Resolver | None,
) -> DeclaredParts:  # fmt: skip
    effect: MutatesDeclaration | ReadsDeclaration = found.get("Mutates") or found["Reads"]
    needs: NeedsDeclaration = found.get("Needs") or NeedsDeclaration()
    because: Because | None = found.get("Because")
    target = next((i.name for i in inputs if i.target), None)
    returns = _hints(cls, run, "run()").get("return")
    return DeclaredParts(
        declared.name,
        declared.description + (" " + because.purpose if because is not None else ""),
        _handler(cls, inputs, run, run_params, resolve),
        dict(
            input_schema=_input_schema(inputs),
            mutating="Mutates" in found,
            requires_confirmation="Confirms" in found,
            scopes=needs.scopes,
            output_schema=None if returns is None else output_schema(returns),
            version=declared.version,
            path=declared.path,
            surfaces=declared.surfaces,
            permission=needs.permission,
            named_target=target,
            effects=effect.profile(),
        ),
    )


def _handler(
    cls: type, inputs: list[_Input], run: Any, run_params: list[_RunParam], resolve: Resolver | None
) -> Callable[..., Any]:
    name = cls.__qualname__

    def prepare(values: Mapping[str, Any], context: InvocationContext | None) -> tuple[Any, dict[str, Any]]:
        kwargs: dict[str, Any] = {}
        for i in inputs:
            if i.name in values:
                kwargs[i.name] = i.convert(values[i.name], i.name)
            elif i.required:
                raise InvalidInput(f"{name}: missing required input '{i.name}'")
        instance = cls(**kwargs)
        collaborators = {
            p.name: context if p.collaborator is None else resolve(p.collaborator)  # type: ignore[misc]
            for p in run_params
        }
        return instance, collaborators

    handler: Callable[..., Any]
    if inspect.iscoroutinefunction(run):

        async def run_async(values: Mapping[str, Any], context: InvocationContext | None = None) -> dict[str, Any]:
            instance, collaborators = prepare(values, context)
            return as_map(await run(instance, **collaborators))

        handler = run_async
    else:

        def run_sync(values: Mapping[str, Any], context: InvocationContext | None = None) -> dict[str, Any]:
            instance, collaborators = prepare(values, context)
            return as_map(run(instance, **collaborators))

        handler = run_sync

    handler.__qualname__ = f"{name}.run"
    setattr(handler, SOURCE_ATTRIBUTE, cls)
    return handler


def as_map(result: Any) -> dict[str, Any]:
    """A result as a map: a mapping as it is, an object as its public fields, a plain value as ``{"result": v}``."""
    if result is None:
        return {}
    if isinstance(result, Mapping):
        return dict(result)
    if isinstance(result, enum.Enum | str | int | float | list):
        return {"result": enum_to_wire(result) if isinstance(result, enum.Enum) else result}
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
    if isinstance(result, tuple):
        as_dict = getattr(result, "_asdict", None)
        return dict(as_dict()) if callable(as_dict) else {"result": list(result)}
    if hasattr(result, "model_fields") and hasattr(result, "__iter__"):
        return dict(result)
    public = getattr(result, "__dict__", None)
    if isinstance(public, dict):
        return {k: v for k, v in public.items() if not k.startswith("_")}
    return {}

"""Type hints of a declared operation -> JSON schema fragments and input converters.

A wire input is an identifier: ``str``, ``int``, ``float``, ``bool``, ``list``, ``dict``, an
``Enum`` or a ``Literal`` (``X | None`` is the nullable ``X``). Anything else is a collaborator and
belongs in ``run()``. Every refusal names the parameter and what to write instead.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from milpa_chat.command.errors import InvalidInput, OperationDeclarationError

__all__ = ["Described", "describe", "output_schema", "split_annotated", "strip_optional"]

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_CONTAINERS: dict[Any, str] = {list: "array", tuple: "array", dict: "object"}
_WORDS = "str, int, float, bool, list, dict, an Enum or a Literal"
Convert = Callable[[Any, str], Any]


def split_annotated(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    """``Annotated[X, a, b]`` -> ``(X, (a, b))``; anything else -> ``(hint, ())``."""
    if get_origin(hint) is Annotated:
        base, *metadata = get_args(hint)
        return base, tuple(metadata)
    return hint, ()


def strip_optional(hint: Any) -> tuple[list[Any], bool]:
    """The members of a union other than ``None``, and whether ``None`` was one of them."""
    if get_origin(hint) in (Union, types.UnionType):
        members = list(get_args(hint))
        others = [m for m in members if m is not type(None)]
        return others, len(others) != len(members)
    return [hint], False


def _enum_wire(kind: type[enum.Enum]) -> tuple[str, list[Any], bool]:
    """(JSON type, admissible wire values, by value?) of an Enum.

    A string-valued enum (``StrEnum``, or ``Enum`` with ``str`` values) and an ``IntEnum`` travel as
    their values; any other enum (``Enum`` with ``auto()``) is "pure" and travels as member names.
    """
    values = [m.value for m in kind]
    if values and all(isinstance(v, str) for v in values):
        return "string", values, True
    if issubclass(kind, int) and not issubclass(kind, bool):
        return "integer", values, True
    return "string", [m.name for m in kind], False


def enum_to_wire(member: enum.Enum) -> Any:
    _, _, by_value = _enum_wire(type(member))
    return member.value if by_value else member.name


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _enum_converter(kind: type[enum.Enum]) -> Convert:
    _, wire, _ = _enum_wire(kind)
    members = list(kind)

    def convert(value: Any, name: str) -> Any:
        if isinstance(value, kind):
            return value
        for member, spelled in zip(members, wire, strict=True):
            if _same(value, spelled) or (isinstance(value, str) and isinstance(spelled, str) and value == spelled):
                return member
        raise InvalidInput(f"'{name}' is not one of {kind.__name__}'s cases: got {value!r}, expected one of {wire}")

    return convert


def _literal_converter(values: tuple[Any, ...]) -> Convert:
    def convert(value: Any, name: str) -> Any:
        if any(_same(value, v) for v in values):
            return value
        raise InvalidInput(f"'{name}' must be one of {list(values)}, got {value!r}")

    return convert


def _identity(value: Any, name: str) -> Any:
    return value


@dataclasses.dataclass(frozen=True, slots=True)
class Described:
    """The schema fragment of one input (``type``, ``items``, ``enum``) and how its wire value becomes a call value."""

    schema: dict[str, Any]
    convert: Convert


def _literal(where: str, hint: Any) -> Described:
    values = get_args(hint)
    kinds = {_SCALARS.get(type(v)) for v in values}
    if len(kinds) != 1 or None in kinds:
        raise OperationDeclarationError(f"{where} has no single type: a Literal's values must all be str, or all int")
    return Described({"type": kinds.pop(), "enum": list(values)}, _literal_converter(values))


def _list(where: str, hint: Any) -> Described:
    args = [a for a in get_args(hint) if a is not Ellipsis]
    if not args or args[0] is Any:
        return Described({"type": "array"}, _identity)
    item = _single(f"{where} (its items)", args[0])
    convert = item.convert
    if convert is _identity:
        return Described({"type": "array", "items": item.schema}, _identity)
    return Described({"type": "array", "items": item.schema}, lambda v, n: [convert(x, n) for x in v])


def _single(where: str, hint: Any) -> Described:
    origin = get_origin(hint)
    if hint in _SCALARS:
        return Described({"type": _SCALARS[hint]}, _identity)
    if hint in _CONTAINERS or origin in _CONTAINERS:
        if _CONTAINERS.get(hint) == "object" or _CONTAINERS.get(origin) == "object":
            return Described({"type": "object"}, _identity)
        return _list(where, hint)
    if origin is Literal:
        return _literal(where, hint)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        kind, values, _ = _enum_wire(hint)
        return Described({"type": kind, "enum": values}, _enum_converter(hint))
    if origin in (Union, types.UnionType):
        raise OperationDeclarationError(f"{where} has no single type ({_name(hint)}): declare one of {_WORDS}")
    raise OperationDeclarationError(
        f"{where} is typed {_name(hint)}, which is not a scalar: a wire input is an identifier ({_WORDS}); "
        f"a collaborator belongs in run(), resolved by the resolver"
    )


def describe(where: str, hint: Any) -> Described:
    """The schema fragment and converter of a constructor parameter's (Annotated-stripped) hint."""
    if hint is inspect.Parameter.empty:
        raise OperationDeclarationError(f"{where} has no single type: annotate it, e.g. `{where.split()[-1]}: str`")
    members, nullable = strip_optional(hint)
    if len(members) != 1:
        raise OperationDeclarationError(f"{where} has no single type ({_name(hint)}): declare one of {_WORDS}")
    found = _single(where, members[0])
    if not nullable:
        return found
    schema = dict(found.schema)
    schema["type"] = [schema["type"], "null"]
    if "enum" in schema:
        schema["enum"] = [*schema["enum"], None]
    convert = found.convert
    return Described(schema, lambda v, n: None if v is None else convert(v, n))


def _name(hint: Any) -> str:
    if isinstance(hint, type):
        return f"{hint.__module__}.{hint.__qualname__}" if hint.__module__ != "builtins" else hint.__qualname__
    return repr(hint).replace("typing.", "")


# ---------------------------------------------------------------------------- output
def _fields_of(kind: type) -> dict[str, Any] | None:
    """The public fields a result class promises (dataclass / pydantic / NamedTuple / TypedDict), or None."""
    try:
        hints = typing.get_type_hints(kind)
    except Exception:
        return None
    if dataclasses.is_dataclass(kind):
        return {f.name: hints.get(f.name, Any) for f in dataclasses.fields(kind) if f.init}
    model_fields = getattr(kind, "model_fields", None)
    if isinstance(model_fields, Mapping):
        return {name: hints.get(name, Any) for name in model_fields}
    if issubclass(kind, tuple) and hasattr(kind, "_fields"):
        return {name: hints.get(name, Any) for name in kind._fields}
    if typing.is_typeddict(kind):
        return hints
    return None


def _output_property(hint: Any) -> dict[str, Any]:
    base, _ = split_annotated(hint)
    members, nullable = strip_optional(base)
    if len(members) != 1:
        return {}
    try:
        schema = _single("output", members[0]).schema
    except OperationDeclarationError:
        return {}
    schema = {k: v for k, v in schema.items() if k != "enum"}
    if nullable:
        schema["type"] = [schema["type"], "null"]
    return schema


def output_schema(returns: Any) -> dict[str, Any] | None:
    """``{"type": "object", "properties": ...}`` for a result class's fields; None for anything else."""
    base, _ = split_annotated(returns)
    if not isinstance(base, type) or base.__module__ == "builtins" or issubclass(base, enum.Enum):
        return None
    fields = _fields_of(base)
    if not fields:
        return None
    return {"type": "object", "properties": {name: _output_property(h) for name, h in fields.items()}}

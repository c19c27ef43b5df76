"""Derive a tool's JSON Schema and compiled validator from its parameters (via pydantic).

The arguments of a tool become one pydantic ``TypedDict`` (so any parameter name works), whose
core schema is rewritten twice: once to close nested objects (which also shapes the JSON Schema),
once more for JSON-semantics validation (see :mod:`milpa_chat.runtime.validators`).
"""

from __future__ import annotations

import inspect
import json
import warnings
from collections.abc import Mapping
from typing import Annotated, Any, NotRequired, Required, get_args, get_origin

from pydantic import ConfigDict, Field, PydanticSchemaGenerationError, PydanticUserError, TypeAdapter
from pydantic.errors import PydanticInvalidForJsonSchema
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import PydanticSerializationError, SchemaSerializer, ValidationError
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

from milpa_chat.errors import DeclarationError
from milpa_chat.runtime.params import ParamSpec
from milpa_chat.runtime.schema import check_json_schema, object_shape_checker, self_contained
from milpa_chat.runtime.validation_errors import CoreSchema, convert_errors
from milpa_chat.runtime.validators import (
    DerivedValidator,
    compile_validator,
    forbid_extras,
    is_json_native,
    json_semantics,
    walk,
    without_computed_fields,
)

__all__ = ["ParamSpec", "derive_arguments", "derive_output_schema"]

_EMPTY = inspect.Parameter.empty
# typing constructs used with run-time values (typed Any so that static checkers accept them)
_Annotated: Any = Annotated
_NotRequired: Any = NotRequired
_Required: Any = Required
_TypedDict: Any = TypedDict
_OPEN_DICTS = (dict, Mapping)


class _Generator(GenerateJsonSchema):
    """No auto-generated field titles; closed nested models say ``additionalProperties: false``."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def model_fields_schema(self, schema: Any) -> JsonSchemaValue:
        return self._closed(super().model_fields_schema(schema), schema)

    def dataclass_args_schema(self, schema: Any) -> JsonSchemaValue:
        return self._closed(super().dataclass_args_schema(schema), schema)

    def _closed(self, json_schema: JsonSchemaValue, schema: Any) -> JsonSchemaValue:
        if schema.get("extra_behavior") == "forbid":
            self.resolve_ref_schema(json_schema).setdefault("additionalProperties", False)
        return json_schema


def _where(tool: str, name: str) -> str:
    return f"@tool {tool!r}, parameter {name!r}"


def _field_type(spec: ParamSpec) -> Any:
    extra: dict[str, Any] = {"description": spec.description, "examples": spec.examples}
    info = Field(
        default=spec.default if spec.default is not _EMPTY else ...,
        **{key: value for key, value in extra.items() if value},
    )
    annotated = _Annotated[spec.annotation, info]
    return _NotRequired[annotated] if spec.default is not _EMPTY else _Required[annotated]


def _adapter(tool: str, specs: list[ParamSpec]) -> TypeAdapter[Any]:
    td: Any = _TypedDict(f"{tool}_arguments", {s.name: _field_type(s) for s in specs})
    td.__pydantic_config__ = ConfigDict(extra="forbid")
    try:
        return TypeAdapter(td)
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError, NameError) as exc:
        for spec in specs:  # find the parameter at fault, for the message
            try:
                TypeAdapter(spec.annotation)
            except (PydanticSchemaGenerationError, PydanticUserError, TypeError, NameError) as one:
                raise _undescribable(tool, spec, one) from None
        raise DeclarationError(f"@tool {tool!r}: cannot derive an argument schema: {exc}") from None


def _undescribable(tool: str, spec: ParamSpec, exc: Exception) -> DeclarationError:
    shown = getattr(spec.annotation, "__name__", None) or repr(spec.annotation)
    if "typing_extensions.TypedDict" in str(exc):
        return DeclarationError(
            f"{_where(tool, spec.name)}: {shown} is a typing.TypedDict, which pydantic cannot read on "
            f"Python < 3.12; declare it with `from typing_extensions import TypedDict`"
        )
    detail = str(exc).splitlines()[0].split(". ")[0].rstrip(".")
    return DeclarationError(
        f"{_where(tool, spec.name)}: no JSON schema describes the type {shown} ({detail}). Use a JSON type "
        f"instead: str, int, float, bool, None, Literal, Enum, list[...], dict[str, ...], a TypedDict or a "
        f"pydantic BaseModel"
    )


def _fields(schema: CoreSchema) -> dict[str, Any]:
    td = schema["schema"] if schema["type"] == "definitions" else schema
    fields: dict[str, Any] = td["fields"]
    return fields


def _inner(node: CoreSchema) -> CoreSchema:
    while node["type"] in ("default", "nullable"):
        node = node["schema"]
    return node


def _dict_like(annotation: Any) -> bool:
    while True:
        origin, args = get_origin(annotation), get_args(annotation)
        if origin is Annotated:
            annotation = args[0]
        elif origin is not None and type(None) in args and len(args) == 2:  # X | None
            annotation = next(a for a in args if a is not type(None))
        else:
            return (origin or annotation) in _OPEN_DICTS and (not args or args[1] is Any)


def _shape_field(tool: str, spec: ParamSpec, field: dict[str, Any]) -> dict[str, Any]:
    """Replace the ``dict`` schema of an object-shaped parameter by a strict dict + shape check."""
    assert spec.shape is not None
    if not _dict_like(spec.annotation):
        raise DeclarationError(
            f"{_where(tool, spec.name)}: Param(type='object') declares an object-shaped dict parameter, "
            f"but the annotation is {spec.annotation!r}; annotate it as `dict` (or `dict[str, Any]`)"
        )
    checked: CoreSchema = {"type": "dict", "keys_schema": {"type": "str", "strict": True}, "strict": True}
    if spec.shape != {"type": "object"}:  # an open object needs no check beyond "is an object"
        check_json_schema(spec.shape, _where(tool, spec.name))
        function = {"type": "no-info", "function": object_shape_checker(spec.shape)}
        checked = {"type": "function-after", "function": function, "schema": checked}

    def visit(node: CoreSchema) -> CoreSchema:
        return checked if node["type"] == "dict" else node

    return {**field, "schema": walk(field["schema"], visit)}


def _clamp_bounds(tool: str, spec: ParamSpec, field: dict[str, Any]) -> tuple[str, float, float]:
    assert spec.clamp is not None
    kind = _inner(field["schema"])["type"]
    low, high = spec.clamp
    if kind == "int" and all(float(b).is_integer() for b in spec.clamp):
        return spec.name, int(low), int(high)
    if kind == "float":
        return spec.name, float(low), float(high)
    fix = "use integer bounds" if kind == "int" else "clamp only int or float parameters"
    raise DeclarationError(
        f"{_where(tool, spec.name)}: Param(clamp={spec.clamp!r}) cannot apply to {spec.annotation!r}; {fix}"
    )


def _check_defaults(tool: str, specs: list[ParamSpec], strict: CoreSchema, wire: SchemaSerializer) -> None:
    """Every default must be JSON and must validate back to itself (``wire`` round-trips); every
    example must be valid; a clamped parameter's default must lie inside the clamp."""
    for spec in specs:
        for example in spec.examples or ():
            detail = _misfit(strict, spec, example)
            if detail is not None:
                raise DeclarationError(
                    f"{_where(tool, spec.name)}: the example {example!r} does not match the annotation ({detail}); "
                    f"fix it or remove it from Param(examples=...) (a model copies examples)"
                )
        if spec.default is _EMPTY:
            continue
        try:
            value = wire.to_python(
                {spec.name: spec.default}, mode="json", by_alias=True, round_trip=True, warnings=False
            )
            json.dumps(value, allow_nan=False)
        except (PydanticSerializationError, TypeError, ValueError) as exc:
            raise DeclarationError(
                f"{_where(tool, spec.name)}: the default {spec.default!r} is not JSON ({exc}); use a JSON "
                f"default (str, int, float, bool, None, list, dict) or None and build the value in the body"
            ) from None
        detail = _misfit(strict, spec, value[spec.name])
        if detail is not None:
            raise DeclarationError(
                f"{_where(tool, spec.name)}: the default {spec.default!r} does not match the annotation "
                f"({detail}); change the default, or allow it in the type (e.g. `X | None = None`)"
            )
        _check_clamped_default(tool, spec)


def _misfit(strict: CoreSchema, spec: ParamSpec, value: Any) -> str | None:
    """Why ``value`` is not a valid value of the parameter ``spec`` (``None`` when it is)."""
    field = _fields(strict)[spec.name]
    one = {"type": "typed-dict", "fields": {spec.name: {**field, "schema": _without_default(field["schema"])}}}
    compiled = {**strict, "schema": one} if strict["type"] == "definitions" else one
    try:
        compile_validator(compiled).validate_python({spec.name: value})
    except ValidationError as exc:
        return "; ".join(str(e) for e in convert_errors(exc, one))
    return None


def _check_clamped_default(tool: str, spec: ParamSpec) -> None:
    default = spec.default
    if spec.clamp is None or not isinstance(default, int | float) or isinstance(default, bool):
        return
    low, high = spec.clamp
    if not low <= default <= high:
        raise DeclarationError(
            f"{_where(tool, spec.name)}: the default {default!r} is outside Param(clamp=({low!r}, {high!r})), so "
            f"the schema would advertise a default it never passes; pick a default inside the range"
        )


def _without_default(node: CoreSchema) -> CoreSchema:
    inner: CoreSchema = node["schema"] if node["type"] == "default" else node
    return inner


def _generate(core: CoreSchema) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _Generator(by_alias=True).generate(core, mode="validation")


def _json_schema(tool: str, core: CoreSchema, specs: list[ParamSpec]) -> dict[str, Any]:
    try:
        raw = _generate(core)
    except PydanticInvalidForJsonSchema as exc:
        for spec in specs:  # find the parameter at fault, for the message
            one = {"type": "typed-dict", "fields": {spec.name: _fields(core)[spec.name]}}
            try:
                _generate({**core, "schema": one} if core["type"] == "definitions" else one)
            except PydanticInvalidForJsonSchema:
                raise _undescribable(tool, spec, exc) from None
        raise DeclarationError(f"@tool {tool!r}: cannot derive an argument schema: {exc}") from None
    tidy = self_contained(raw)
    props: dict[str, Any] = tidy.get("properties", {})
    for spec in specs:
        prop = props[spec.name]
        if spec.clamp is not None:
            prop["minimum"], prop["maximum"] = spec.clamp
        if spec.shape is not None:
            for key in ("properties", "required", "additionalProperties"):
                if key in spec.shape:
                    prop[key] = spec.shape[key]
    out: dict[str, Any] = {"type": "object", "properties": props, "required": tidy.get("required", [])}
    out["additionalProperties"] = False
    if "$defs" in tidy:
        out["$defs"] = tidy["$defs"]
    return out


def derive_arguments(tool: str, specs: list[ParamSpec]) -> tuple[dict[str, Any], DerivedValidator]:
    """The input JSON Schema and the compiled validator of a tool with these parameters."""
    shape_core = forbid_extras(dict(_adapter(tool, specs).core_schema))
    fields = _fields(shape_core)
    clamps = []
    for spec in specs:
        if spec.shape is not None:
            fields[spec.name] = _shape_field(tool, spec, fields[spec.name])
        if spec.clamp is not None:
            clamps.append(_clamp_bounds(tool, spec, fields[spec.name]))
    strict = json_semantics(shape_core)
    wire = without_computed_fields(shape_core)
    _check_defaults(tool, specs, strict, SchemaSerializer(wire))
    native = all(is_json_native(f["schema"]) for f in fields.values()) and shape_core["type"] != "definitions"
    input_schema = _json_schema(tool, shape_core, specs)
    return input_schema, DerivedValidator(strict, wire, clamps, native)


# ----------------------------------------------------------------------------- output schema
def _plain(annotation: Any) -> bool:
    """True for return types that say nothing worth a schema (None, Any, bare dict, ToolResult)."""
    if annotation in (_EMPTY, None, type(None), Any, dict, Mapping, object):
        return True
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _plain(args[0])
    if origin in _OPEN_DICTS:
        return not args or args[1] is Any
    return _mentions_result(annotation)


def _mentions_result(annotation: Any) -> bool:
    from milpa_chat.runtime.result import ToolResult

    if isinstance(annotation, type) and issubclass(annotation, ToolResult):
        return True
    return any(_mentions_result(a) for a in get_args(annotation))


def derive_output_schema(annotation: Any) -> dict[str, Any] | None:
    """The JSON Schema of a return annotation, or None when there is nothing useful to describe."""
    if _plain(annotation):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            raw = TypeAdapter(annotation).json_schema(mode="serialization", schema_generator=_Generator)
    except Exception:  # an undescribable return type only means "no output schema"
        return None
    return self_contained(raw)

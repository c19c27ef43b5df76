"""JSON Schema side of argument validation: hand-written schemas, their validators, and tidying.

* :func:`check_json_schema` checks a hand-written schema (2020-12) at declaration time.
* :class:`JsonSchemaValidator` validates the arguments of a hand-registered tool with a compiled
  ``jsonschema`` validator (full 2020-12; ``format`` is not asserted) and fills top-level defaults;
  its messages never repeat the rejected value (:mod:`milpa_chat.runtime.schema_messages`).
* :func:`object_shape_checker` validates an object-shaped ``dict`` parameter (``Param(type="object")``)
  inside the compiled pydantic validator of a decorated tool.
* :func:`self_contained` inlines ``$defs`` so that LLM providers accept the schema.

``jsonschema`` is imported inside functions only: it is slow to import and most tools never need it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from milpa_chat.errors import DeclarationError
from milpa_chat.runtime.definition import ArgumentError, InvalidArguments, ToolDefinition, ValidatedArgs, VerifyPolicy
from milpa_chat.runtime.handlers import handler_for
from milpa_chat.runtime.schema_messages import Loc, json_schema_errors, path_text
from milpa_chat.runtime.signature import is_async_callable
from milpa_chat.runtime.tool_options import check_argument_name, tool_options

__all__ = [
    "JsonSchemaValidator",
    "check_json_schema",
    "compile_json_schema",
    "definition_from_schema",
    "json_schema_errors",
    "object_shape_checker",
    "self_contained",
]

_DATA_KEYWORDS = frozenset({"default", "examples", "enum", "const"})


def check_json_schema(schema: Any, where: str) -> None:
    """Raise :class:`DeclarationError` unless ``schema`` is a valid JSON Schema 2020-12."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if not isinstance(schema, Mapping):
        raise DeclarationError(f"{where}: a JSON schema must be a dict, got {type(schema).__name__}")
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        at = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise DeclarationError(
            f"{where}: invalid JSON Schema 2020-12 at {at}: {exc.message}. "
            f"Fix the schema (see https://json-schema.org/draft/2020-12/json-schema-validation)"
        ) from None


def compile_json_schema(schema: Mapping[str, Any]) -> Any:
    """A compiled 2020-12 validator (no ``format`` assertion) for an already checked schema."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(_false_as_not(schema))


def _false_as_not(node: Any) -> Any:
    """``false`` property/item schemas as ``{"not": {}}``: the same rule, but jsonschema then keeps
    the error's path (it drops the last step for a bare ``false``)."""
    if isinstance(node, list):
        return [_false_as_not(v) for v in node]
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("properties", "patternProperties", "dependentSchemas", "$defs") and isinstance(value, Mapping):
            out[key] = {k: {"not": {}} if v is False else _false_as_not(v) for k, v in value.items()}
        elif key == "prefixItems" and isinstance(value, list):
            out[key] = [{"not": {}} if v is False else _false_as_not(v) for v in value]
        elif key in _DATA_KEYWORDS:
            out[key] = value
        else:
            out[key] = _false_as_not(value)
    return out


def _argument_errors(items: list[tuple[Loc, str]]) -> list[ArgumentError]:
    return [ArgumentError(path_text(loc), message) for loc, message in items]


# -------------------------------------------------------------------- hand-registered tools
class JsonSchemaValidator:
    """The validator of a hand-registered tool (an :class:`ArgumentsValidator`).

    Missing top-level properties that declare a ``default`` are filled in (a deep copy), so
    ``wire`` includes defaults and validates again to the same result. ``wire`` and ``call``
    are the same dict: the handler receives plain JSON.
    """

    __slots__ = ("_defaults", "_validator")

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self._validator = compile_json_schema(schema)
        props = schema.get("properties", {})
        self._defaults = {
            name: spec["default"] for name, spec in props.items() if isinstance(spec, Mapping) and "default" in spec
        }

    def __call__(self, args: Mapping[str, Any], /) -> ValidatedArgs:
        values: Any = dict(args) if isinstance(args, Mapping) else args
        if isinstance(values, dict):
            for name, default in self._defaults.items():
                if name not in values:
                    values[name] = copy.deepcopy(default)
        errors = json_schema_errors(self._validator, values)
        if errors:
            raise InvalidArguments(_argument_errors(errors))
        return ValidatedArgs(values, values)

    def check_defaults(self, where: str) -> None:
        """Raise :class:`DeclarationError` when a declared default does not fit its own property."""
        props = self._validator.schema.get("properties", {})
        for name, default in self._defaults.items():
            problems = json_schema_errors(compile_json_schema(props[name]), default)
            if problems:
                detail = "; ".join(m for _, m in problems)
                raise DeclarationError(
                    f"{where}: the default of property {name!r} does not match its own schema ({detail}); "
                    f"change the default or the property schema"
                )


# ------------------------------------------------------------------ object-shaped parameters
def object_shape_checker(schema: Mapping[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A pydantic after-validator checking a ``dict`` against a hand-written object schema."""
    from pydantic_core import PydanticCustomError, ValidationError

    from milpa_chat.runtime.validation_errors import CUSTOM_ERROR

    validator = compile_json_schema(schema)

    def check(value: dict[str, Any]) -> dict[str, Any]:
        errors = json_schema_errors(validator, value)
        if not errors:
            return value
        lines: list[Any] = [
            {"type": PydanticCustomError(CUSTOM_ERROR, "{message}", {"message": m}), "loc": loc, "input": value}
            for loc, m in errors
        ]
        raise ValidationError.from_exception_data("object", lines)

    return check


# ------------------------------------------------------------------------- self-contained
def _refs(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            found.add(ref[len("#/$defs/") :])
        for key, value in node.items():
            if key not in _DATA_KEYWORDS:
                found |= _refs(value)
    elif isinstance(node, list):
        for value in node:
            found |= _refs(value)
    return found


def _recursive(defs: dict[str, Any]) -> set[str]:
    edges = {name: _refs(body) for name, body in defs.items()}
    cyclic: set[str] = set()
    for start in defs:
        stack, seen = list(edges[start]), set()
        while stack:
            name = stack.pop()
            if name == start:
                cyclic.add(start)
                break
            if name not in seen and name in edges:
                seen.add(name)
                stack.extend(edges[name])
    return cyclic


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    """``{"anyOf": [X, {"type": "null"}]}`` -> X with ``"type": [X.type, "null"]`` when X is simple."""
    options = node.get("anyOf")
    if not (isinstance(options, list) and len(options) == 2 and {"type": "null"} in options):
        return node
    other = options[0] if options[1] == {"type": "null"} else options[1]
    if not isinstance(other.get("type"), str) or {"anyOf", "oneOf", "allOf", "$ref", "not"} & other.keys():
        return node
    merged = {**other, **{k: v for k, v in node.items() if k != "anyOf"}}
    merged["type"] = [other["type"], "null"]
    if "const" in other:
        merged["enum"] = [merged.pop("const")]
    if "enum" in merged and None not in merged["enum"]:
        merged["enum"] = [*merged["enum"], None]
    return merged


def _inline(node: Any, defs: dict[str, Any], keep: set[str]) -> Any:
    if isinstance(node, list):
        return [_inline(v, defs, keep) for v in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[len("#/$defs/") :] not in keep:
        target = _inline(defs[ref[len("#/$defs/") :]], defs, keep)
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _nullable(node)
    out = {k: v if k in _DATA_KEYWORDS else _inline(v, defs, keep) for k, v in node.items()}
    return _nullable(out)


def self_contained(schema: dict[str, Any]) -> dict[str, Any]:
    """Inline every ``$defs`` entry that is not recursive; recursive ones stay under ``$defs``.

    Also writes ``anyOf: [X, null]`` as ``type: [X, "null"]`` where that means the same.
    """
    defs = dict(schema.get("$defs", {}))
    keep = _recursive(defs)
    body = {k: v for k, v in schema.items() if k != "$defs"}
    out: dict[str, Any] = _inline(body, defs, keep)
    if keep:
        out["$defs"] = {name: _inline(defs[name], defs, keep) for name in sorted(keep)}
    return out


# -------------------------------------------------------------------- hand-registered tools
def definition_from_schema(
    name: str,
    description: str,
    input_schema: Mapping[str, Any],
    handler: Callable[[dict[str, Any], Any], Any],
    *,
    scopes: Iterable[str] = (),
    mutating: bool | None = None,
    confirm: bool = False,
    timeout: float = 30.0,
    version: str | None = None,
    output_schema: Mapping[str, Any] | None = None,
    verify: VerifyPolicy | None = None,
    tags: Iterable[str] = (),
) -> ToolDefinition:
    """A tool from a hand-written JSON Schema; ``handler(args: dict, ctx: ToolContext)``, sync or async.

    The schema is checked (2020-12) now and validated at call time with a compiled ``jsonschema``
    validator; a schema without ``type`` is taken as ``"type": "object"``.
    """
    options = tool_options(
        name, description, scopes=scopes, mutating=mutating, confirm=confirm, timeout=timeout, version=version,
        verify=verify, tags=tags,
    )  # fmt: skip
    if not name or not description:
        raise DeclarationError("A hand-registered tool needs a name and a description")
    schema = _input_schema(name, input_schema)
    invoke = handler_for(name, handler, schema)
    if output_schema is not None:
        check_json_schema(output_schema, f"Tool {name!r} output_schema")
    return ToolDefinition(
        name=name, description=description, input_schema=schema, validator=JsonSchemaValidator(schema),
        invoke=invoke, is_async=is_async_callable(handler), scopes=options.scopes, mutating=mutating is not False,
        effect_declared=mutating is not None,
        confirm=confirm, timeout=options.timeout, version=version,
        output_schema=copy.deepcopy(dict(output_schema)) if output_schema is not None else None,
        verify=verify, tags=options.tags, extra={"qualname": getattr(handler, "__qualname__", name)},
    )  # fmt: skip


def _input_schema(name: str, input_schema: Mapping[str, Any]) -> dict[str, Any]:
    where = f"Tool {name!r} input_schema"
    check_json_schema(input_schema, where)
    schema = copy.deepcopy(dict(input_schema))
    if schema.setdefault("type", "object") != "object":
        raise DeclarationError(f'{where}: a tool takes an object of named arguments; use "type": "object"')
    _check_property_names(where, schema)
    JsonSchemaValidator(schema).check_defaults(where)
    return schema


def _check_property_names(where: str, schema: Mapping[str, Any]) -> None:
    """Reserved argument names, and required properties that a closed object cannot hold."""
    props = schema.get("properties", {})
    required = schema.get("required", [])
    for name in [*props, *required]:
        check_argument_name(f"{where}, property {name!r}", name)
    if schema.get("additionalProperties") is False and not schema.get("patternProperties"):
        missing = [n for n in required if n not in props]
        if missing:
            raise DeclarationError(
                f"{where}: 'required' lists {missing} but 'properties' does not, and additionalProperties is "
                f"false, so no call could ever pass; add them to 'properties' or remove them from 'required'"
            )

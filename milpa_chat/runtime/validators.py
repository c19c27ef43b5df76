"""Compiled argument validators for ``@tool`` functions (pydantic-core, JSON semantics).

The pydantic core schema of a tool's arguments is rewritten before it is compiled, so that
Python-mode validation behaves like JSON validation:

* ``int``/``float``/``str``/``bool``/``list``/``dict`` are strict: ``"5"`` is not a number,
  ``5`` is not a string, ``True`` is not an integer, a tuple is not an array.
* A float with no fractional part (``5.0``) is accepted for an integer and becomes ``5``
  (JSON Schema calls ``5.0`` an integer).
* Floats reject ``NaN`` and ``Infinity`` (they are not JSON).
* Enums and ``Literal`` accept their JSON values only (``"1"`` is not ``1``, ``True`` is not ``1``).
* Nested models, TypedDicts and dataclasses accept JSON objects (they stay lax so a ``dict``
  is accepted where a model is expected); their unknown keys are errors unless the class
  configures ``extra`` itself.

This module imports pydantic at import time; ``declare.py`` imports it lazily.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pydantic_core import PydanticSerializationError, SchemaSerializer, SchemaValidator, ValidationError

from milpa_chat.runtime.definition import ArgumentError, InvalidArguments, ValidatedArgs
from milpa_chat.runtime.validation_errors import CUSTOM_ERROR, UNION_MARK, CoreSchema, convert_errors

__all__ = [
    "DerivedValidator",
    "compile_validator",
    "forbid_extras",
    "is_json_native",
    "iter_nodes",
    "json_semantics",
    "walk",
    "without_computed_fields",
]


_CHILD_KEYS = (
    "schema",
    "items_schema",
    "keys_schema",
    "values_schema",
    "choices",
    "steps",
    "fields",
    "definitions",
    "extras_schema",
    "lax_schema",
    "strict_schema",
    "json_schema",
    "python_schema",
)
_STRICT_TYPES = frozenset({"str", "bool", "list", "dict"})
_CLASS_TYPES = frozenset({"model", "typed-dict", "dataclass"})
_NATIVE_LEAVES = frozenset({"int", "float", "str", "bool", "none"})
_ANY: CoreSchema = {"type": "any"}


class _Never:
    """Nothing is an instance of this: a union choice that always fails (keeps custom errors)."""


def walk(node: Any, visit: Callable[[CoreSchema], CoreSchema]) -> Any:
    """Copy a core schema bottom-up, calling ``visit`` on every schema node (children first).

    Only the keys that hold child schemas are descended into; metadata, defaults, literal
    values and serialization schemas are shared, never visited.
    """
    if isinstance(node, dict):
        if "type" not in node:
            return {k: walk(v, visit) for k, v in node.items()}
        copied = dict(node)
        for key in _CHILD_KEYS:
            if key in copied:
                copied[key] = walk(copied[key], visit)
        return visit(copied)
    if isinstance(node, list):
        return [walk(v, visit) for v in node]
    if isinstance(node, tuple):
        return tuple(walk(v, visit) for v in node)
    return node


# ----------------------------------------------------------------- stage 1: shape (schema + JSON Schema)
def forbid_extras(schema: CoreSchema) -> CoreSchema:
    """Unknown keys of nested objects are errors unless their class configures ``extra``."""

    def visit(node: CoreSchema) -> CoreSchema:
        kind = node["type"]
        if kind not in _CLASS_TYPES:
            return node
        cls: Any = node.get("cls")
        config = (cls.model_config if kind == "model" else getattr(cls, "__pydantic_config__", None)) or {}
        if "extra" in config:
            return node
        # pydantic writes the enclosing class's behaviour ("ignore") into nodes whose class says nothing
        if kind == "typed-dict":
            node["extra_behavior"] = "forbid"
        else:  # model -> model-fields, dataclass -> dataclass-args
            inner = dict(node["schema"])
            if inner["type"] in ("model-fields", "dataclass-args"):
                inner["extra_behavior"] = "forbid"
                node["schema"] = inner
                node["config"] = {**node.get("config", {}), "extra_fields_behavior": "forbid"}
        return node

    result: CoreSchema = walk(schema, visit)
    return result


def without_computed_fields(schema: CoreSchema) -> CoreSchema:
    """The schema for serializing ``wire``: computed fields would not validate back."""

    def visit(node: CoreSchema) -> CoreSchema:
        if "computed_fields" in node:
            node["computed_fields"] = []
        return node

    result: CoreSchema = walk(schema, visit)
    return result


# --------------------------------------------------------------- stage 2: JSON semantics (validation)
_INT_FROM_JSON: CoreSchema = {
    "type": "union",
    "choices": [
        {"type": "int", "strict": True},
        {"type": "chain", "steps": [{"type": "float", "strict": True}, {"type": "int"}]},
    ],
    "custom_error_type": "int_type",
}
_JSON_TYPE_OF: dict[type, CoreSchema] = {
    bool: {"type": "bool", "strict": True},
    int: _INT_FROM_JSON,
    float: {"type": "float", "strict": True, "allow_inf_nan": False},
    str: {"type": "str", "strict": True},
    type(None): {"type": "none"},
}
_NOT_CONSTRAINTS = frozenset({"type", "strict", "ref", "metadata", "serialization"})


def _json_kind(value: Any) -> type:
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind
    return type(None) if value is None else object


def _expected_text(values: list[Any]) -> str:
    shown = [repr(v) for v in values]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


def _choices_with_message(choices: list[CoreSchema], message: str) -> CoreSchema:
    """Try ``choices`` in order; on failure one error with ``message`` (a final, custom error)."""
    return {
        "type": "union",
        "choices": [*choices, {"type": "is-instance", "cls": _Never}],  # 2+ choices keep the custom error
        "mode": "left_to_right",
        "custom_error_type": CUSTOM_ERROR,
        "custom_error_message": message,
    }


def _literal_node(node: CoreSchema) -> CoreSchema:
    expected = list(node["expected"])
    groups: dict[type, list[Any]] = {}
    for value in expected:
        groups.setdefault(_json_kind(value), []).append(value)
    if object in groups:  # non-JSON literal values (enum members, bytes): keep pydantic's rules
        return node
    choices = [
        {"type": "chain", "steps": [_JSON_TYPE_OF[kind], {"type": "literal", "expected": values}]}
        for kind, values in groups.items()
    ]
    return _choices_with_message(choices, f"Input should be {_expected_text(expected)}")


def _enum_node(node: CoreSchema) -> CoreSchema:
    values = [member.value for member in node["members"]]
    kinds = {_json_kind(v) for v in values}
    if len(kinds) != 1 or object in kinds:
        return node
    member = {"type": "is-instance", "cls": node["cls"]}
    from_value = {"type": "chain", "steps": [_JSON_TYPE_OF[kinds.pop()], {**node, "strict": False}]}
    return _choices_with_message([member, from_value], f"Input should be {_expected_text(values)}")


def _int_node(node: CoreSchema) -> CoreSchema:
    if _NOT_CONSTRAINTS.issuperset(node):
        return _INT_FROM_JSON
    return {"type": "chain", "steps": [_INT_FROM_JSON, {**node, "strict": True}]}


def _union_node(node: CoreSchema) -> CoreSchema:
    choices = [c[0] if isinstance(c, tuple) else c for c in node["choices"]]
    return {**node, "choices": [(c, f"{UNION_MARK}{i}") for i, c in enumerate(choices)]}


_REPLACED = {"int": _int_node, "literal": _literal_node, "enum": _enum_node, "union": _union_node}


def _json_node(node: CoreSchema) -> CoreSchema:
    kind = node["type"]
    if kind in _STRICT_TYPES:
        return {**node, "strict": True}
    if kind == "float":
        return {**node, "strict": True, "allow_inf_nan": False}
    if kind in _CLASS_TYPES:
        node["strict"] = False
        if "config" in node:
            node["config"] = {**node["config"], "strict": False}
    return node


def json_semantics(schema: CoreSchema) -> CoreSchema:
    """Rewrite a (stage-1) core schema so that Python-mode validation follows JSON rules."""

    def visit(node: CoreSchema) -> CoreSchema:
        replace = _REPLACED.get(node["type"])
        if replace is None:
            return _json_node(node)
        ref = node.pop("ref", None)  # a definition keeps its ref on the replacement, only there
        out = replace(node)
        return out if ref is None else {**out, "ref": ref}

    result: CoreSchema = walk(schema, visit)
    return result


def is_json_native(schema: CoreSchema) -> bool:
    """True when validated values of ``schema`` are already JSON (so ``wire`` may equal ``call``)."""
    kind = schema["type"]
    if kind in _NATIVE_LEAVES:
        return True
    if kind == "literal":
        return all(_json_kind(v) is not object for v in schema["expected"])
    if kind == "default":
        return _is_json_value(schema.get("default")) and is_json_native(schema["schema"])
    if kind == "nullable":
        return is_json_native(schema["schema"])
    if kind == "list":
        return is_json_native(schema.get("items_schema", _ANY))
    if kind == "dict":
        keys = schema.get("keys_schema", _ANY)
        return keys["type"] == "str" and is_json_native(schema.get("values_schema", _ANY))
    if kind == "union":
        return all(is_json_native(c[0] if isinstance(c, tuple) else c) for c in schema["choices"])
    return False


def _is_json_value(value: Any) -> bool:
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return value == value and value not in (float("inf"), float("-inf"))
    if isinstance(value, list):
        return all(_is_json_value(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json_value(v) for k, v in value.items())
    return False


# ------------------------------------------------------------------------------- compiling
_BUILD_LOCK = threading.Lock()


@contextmanager
def _own_validators(schema: CoreSchema) -> Iterator[None]:
    """Make pydantic-core build nested models/dataclasses from *this* schema.

    pydantic-core reuses the validator a complete model or pydantic dataclass already has
    (found through ``__pydantic_complete__`` in the class ``__dict__``), which would ignore the
    JSON-semantics rewrite. The flag is lowered only while the validator is being built.
    """
    classes = {
        node["cls"]
        for node in iter_nodes(schema)
        if node["type"] in ("model", "dataclass") and vars(node["cls"]).get("__pydantic_complete__") is True
    }
    with _BUILD_LOCK:
        for cls in classes:
            cls.__pydantic_complete__ = False
        try:
            yield
        finally:
            for cls in classes:
                cls.__pydantic_complete__ = True


def compile_validator(schema: CoreSchema) -> SchemaValidator:
    """A :class:`SchemaValidator` built from ``schema`` itself, nested classes included."""
    with _own_validators(schema):
        return SchemaValidator(schema)


# --------------------------------------------------------------------------------- validator
Clamp = tuple[str, float, float]


class DerivedValidator:
    """The compiled validator of a decorated tool (an :class:`ArgumentsValidator`).

    ``schema`` is the JSON-semantics core schema of the whole argument object; ``clamps``
    lists ``(parameter, low, high)``; ``native`` says validated values are already JSON.
    """

    __slots__ = ("_clamps", "_explained", "_native", "_schema", "_serialize", "_validate")

    def __init__(self, schema: CoreSchema, wire_schema: CoreSchema, clamps: list[Clamp], native: bool) -> None:
        self._schema = schema
        self._validate = compile_validator(schema).validate_python
        self._serialize = SchemaSerializer(wire_schema).to_python
        self._clamps = tuple(clamps)
        self._native = native
        self._explained: dict[tuple[Any, ...], tuple[tuple[ArgumentError, ...], str]] = {}

    def __call__(self, args: Mapping[str, Any], /) -> ValidatedArgs:
        try:
            out: dict[str, Any] = self._validate(args)
        except ValidationError as exc:
            raise self._explain(exc) from None
        for name, low, high in self._clamps:
            value = out.get(name)
            if value is not None:
                out[name] = low if value < low else high if value > high else value
        if self._native:
            return ValidatedArgs(out, out)
        return ValidatedArgs(jsonify(self._serialize, out), out)

    def _explain(self, exc: ValidationError) -> InvalidArguments:
        """The errors as people read them. Refused calls repeat (the same field, the same rule), so the
        converted messages are remembered by what they depend on: kind, location, pydantic's text and,
        for length rules, the size given (never the value itself)."""
        errors = exc.errors(include_url=False, include_input=True)
        key = tuple([(e["type"], e["loc"], e["msg"], _size(e.get("input"), e["msg"])) for e in errors])
        known = self._explained.get(key)
        if known is None:
            converted = tuple(convert_errors(exc, self._schema, errors))
            known = (converted, "; ".join(str(e) for e in converted))
            if -1 not in (part[3] for part in key):  # a text that quoted the value is never kept
                if len(self._explained) >= 256:
                    self._explained.clear()
                self._explained[key] = known
        return InvalidArguments(list(known[0]), known[1])


def _size(value: Any, message: str) -> int | None:
    """What a message may depend on besides its kind and place: the size of a sized value; -1 when
    pydantic's text may quote the value itself (such a message is converted afresh every time)."""
    kind = type(value)
    if kind is str:
        return -1 if value in message else len(value)
    if kind is int or kind is float:
        return -1 if str(value) in message else None
    return len(value) if kind in _SIZED else None


_SIZED = frozenset({bytes, list, tuple, dict, set, frozenset})


def jsonify(serialize: Callable[..., Any], value: Any) -> dict[str, Any]:
    """The validated arguments as JSON values; a value JSON cannot carry (a function, an object) is refused."""
    try:
        wire: dict[str, Any] = serialize(
            value, mode="json", by_alias=True, round_trip=True, exclude_computed_fields=True
        )
    except (PydanticSerializationError, ValueError, TypeError) as exc:
        raise InvalidArguments(
            [
                ArgumentError(
                    "",
                    f"a value cannot be sent as JSON ({_kind_of(exc)}); send "
                    "strings, numbers, booleans, null, lists and objects",
                )
            ]
        ) from None
    return wire


def _kind_of(exc: Exception) -> str:
    text = str(exc)
    marker = "unknown type: <class '"
    if marker in text:
        return "a value of type " + text.split(marker, 1)[1].split("'", 1)[0]
    return type(exc).__name__


def iter_nodes(schema: Any) -> Iterator[CoreSchema]:
    """Every schema node of a core schema (for inspection)."""
    found: list[CoreSchema] = []

    def visit(node: CoreSchema) -> CoreSchema:
        found.append(node)
        return node

    walk(schema, visit)
    return iter(found)

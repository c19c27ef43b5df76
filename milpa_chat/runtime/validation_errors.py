"""Turn pydantic validation errors into :class:`ArgumentError`s with dotted paths and plain messages.

* ``missing`` becomes ``Missing required field``;
* an unknown key becomes ``Unknown property 'x'; accepted properties: a, b``;
* object/array type errors say ``object``/``array`` (the JSON words);
* union choices are labelled ``<UNION_MARK><index>`` by the validator and left out of paths.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from pydantic_core import ValidationError

from milpa_chat.runtime.definition import ArgumentError

__all__ = ["CUSTOM_ERROR", "UNION_MARK", "CoreSchema", "accepted_properties", "convert_errors", "render_path"]

CoreSchema = dict[str, Any]
#: Union choices are relabelled ``<UNION_MARK><index>`` so that error paths can drop them.
UNION_MARK = "\u2063union:"
#: Error type of errors whose message is final (literal/enum checks, object-shape checks).
CUSTOM_ERROR = "milpa_argument"

_OBJECT_ERRORS = frozenset({"dict_type", "model_type", "model_attributes_type", "dataclass_type"})
_ARRAY_ERRORS = frozenset({"list_type", "tuple_type", "set_type", "frozen_set_type", "iterable_type"})
_ANY: CoreSchema = {"type": "any"}
_WRAPPERS = frozenset({"default", "nullable", "model", "dataclass"})


def _unwrap(node: CoreSchema, defs: dict[str, CoreSchema]) -> CoreSchema:
    for _ in range(64):
        kind = node["type"]
        if kind == "definitions":
            defs.update({d["ref"]: d for d in node["definitions"]})
            node = node["schema"]
        elif kind == "definition-ref":
            node = defs[node["schema_ref"]]
        elif kind in _WRAPPERS or kind.startswith("function-"):
            node = node["schema"]
        elif kind == "chain":
            node = node["steps"][-1]
        elif kind == "json-or-python":
            node = node["python_schema"]
        elif kind == "lax-or-strict":
            node = node["lax_schema"]
        else:
            break
    return node


def _alias(spec: Mapping[str, Any], name: str) -> str:
    alias = spec.get("validation_alias")
    return alias if isinstance(alias, str) else name


def _field_names(node: CoreSchema) -> list[str] | None:
    if node["type"] in ("typed-dict", "model-fields"):
        return [_alias(spec, name) for name, spec in node["fields"].items()]
    if node["type"] == "dataclass-args":
        return [_alias(spec, spec["name"]) for spec in node["fields"]]
    return None


def _named_child(node: CoreSchema, part: str) -> CoreSchema | None:
    if node["type"] in ("typed-dict", "model-fields"):
        fields = node["fields"].items()
    elif node["type"] == "dataclass-args":
        fields = ((spec["name"], spec) for spec in node["fields"])
    else:
        return None
    for name, spec in fields:
        if part in (name, spec.get("validation_alias")):
            return cast(CoreSchema, spec["schema"])
    return None


def _child(node: CoreSchema, part: str | int) -> CoreSchema | None:
    kind = node["type"]
    if isinstance(part, int):
        if kind in ("list", "set", "frozenset"):
            return cast(CoreSchema, node.get("items_schema", _ANY))
        if kind == "tuple" and node["items_schema"]:
            items = node["items_schema"]
            return cast(CoreSchema, items[min(part, len(items) - 1)])
    if kind == "dict":
        return cast(CoreSchema, node.get("values_schema", _ANY))
    if kind == "union" and isinstance(part, str) and part.startswith(UNION_MARK):
        choice = node["choices"][int(part[len(UNION_MARK) :])]
        return cast(CoreSchema, choice[0] if isinstance(choice, tuple) else choice)
    if kind == "tagged-union":
        return cast("CoreSchema | None", node["choices"].get(part))
    return _named_child(node, part) if isinstance(part, str) else None


def accepted_properties(schema: CoreSchema, loc: tuple[str | int, ...]) -> list[str] | None:
    """The property names of the object at ``loc`` (a pydantic error location), if known."""
    defs: dict[str, CoreSchema] = {}
    node: CoreSchema | None = schema
    for part in loc:
        if node is None:
            return None
        node = _child(_unwrap(node, defs), part)
    return _field_names(_unwrap(node, defs)) if node is not None else None


def render_path(loc: tuple[str | int, ...]) -> str:
    """``("filters", "tags", 2)`` -> ``"filters.tags.2"`` (union labels left out)."""
    return ".".join(str(p) for p in loc if not (isinstance(p, str) and p.startswith(UNION_MARK)))


def _message(error: Mapping[str, Any], schema: CoreSchema) -> str:
    kind = error["type"]
    if kind == "missing":
        return "Missing required field"
    if kind in ("extra_forbidden", "unexpected_keyword_argument"):
        key = error["loc"][-1]
        accepted = accepted_properties(schema, error["loc"][:-1])
        if accepted is None:
            return f"Unknown property {key!r}"
        if not accepted:
            return f"Unknown property {key!r}; this object takes no properties"
        return f"Unknown property {key!r}; accepted properties: {', '.join(accepted)}"
    if kind in _OBJECT_ERRORS:
        return "Input should be an object"
    if kind in _ARRAY_ERRORS:
        return "Input should be an array"
    return str(error["msg"])


def convert_errors(exc: ValidationError, schema: CoreSchema) -> list[ArgumentError]:
    """Every pydantic error as an :class:`ArgumentError`, in pydantic's (field) order, deduplicated."""
    out: list[ArgumentError] = []
    seen: set[tuple[str, str]] = set()
    for error in exc.errors(include_url=False, include_input=False):
        item = (render_path(error["loc"]), _message(error, schema))
        if item not in seen:
            seen.add(item)
            out.append(ArgumentError(*item))
    return out

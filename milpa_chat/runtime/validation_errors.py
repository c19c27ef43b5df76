"""Turn pydantic validation errors into :class:`ArgumentError`s with dotted paths and plain messages.

* ``missing`` becomes ``Missing required field``;
* an unknown key becomes ``Unknown property 'x'; accepted properties: a, b``;
* object/array type errors say ``object``/``array`` (the JSON words);
* union choices are labelled ``<UNION_MARK><index>`` by the validator and left out of paths;
* no message repeats the rejected value (see :mod:`milpa_chat.runtime.schema_messages`): lengths
  say what was received (``String should have at most 10 characters (got 14)``), parse errors
  stop before the detail that quotes the input, and a custom validator's message has the input
  replaced by ``<the value>``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from pydantic_core import ValidationError

from milpa_chat.runtime.definition import ArgumentError
from milpa_chat.runtime.schema_messages import chars, items, key_text, path_text

__all__ = ["CUSTOM_ERROR", "UNION_MARK", "CoreSchema", "accepted_properties", "convert_errors", "render_path"]

CoreSchema = dict[str, Any]
#: Union choices are relabelled ``<UNION_MARK><index>`` so that error paths can drop them.
UNION_MARK = "\u2063union:"
#: Error type of errors whose message is final (literal/enum checks, object-shape checks).
CUSTOM_ERROR = "milpa_argument"

_OBJECT_ERRORS = frozenset({"dict_type", "model_type", "model_attributes_type", "dataclass_type"})
_ARRAY_ERRORS = frozenset({"list_type", "tuple_type", "set_type", "frozen_set_type", "iterable_type"})
_PARSE_ERRORS = frozenset({"json_invalid", "url_syntax_violation", "uuid_version", "datetime_object_invalid"})
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
    """``("filters", "tags", 2)`` -> ``"filters.tags.2"`` (union labels left out; long or invisible
    keys clipped and escaped)."""
    return path_text(p for p in loc if not (isinstance(p, str) and p.startswith(UNION_MARK)))


def _message(error: Mapping[str, Any], schema: CoreSchema) -> str:
    kind = error["type"]
    if kind == "missing":
        return "Missing required field"
    if kind in ("extra_forbidden", "unexpected_keyword_argument"):
        key = key_text(error["loc"][-1])
        accepted = accepted_properties(schema, error["loc"][:-1])
        if accepted is None:
            return f"Unknown property {key}"
        if not accepted:
            return f"Unknown property {key}; this object takes no properties"
        return f"Unknown property {key}; accepted properties: {', '.join(accepted)}"
    if kind in _OBJECT_ERRORS:
        return "Input should be an object"
    if kind in _ARRAY_ERRORS:
        return "Input should be an array"
    return _without_input(_rule_message(error), error.get("input"))


def _rule_message(error: Mapping[str, Any]) -> str:
    kind, ctx, given = error["type"], error.get("ctx") or {}, error.get("input")
    size = len(given) if isinstance(given, str | bytes | list | tuple | dict | set | frozenset) else None
    if kind in ("string_too_short", "string_too_long") and size is not None:
        bound = int(ctx.get("min_length" if kind == "string_too_short" else "max_length") or 0)
        side = "least" if kind == "string_too_short" else "most"
        return f"String should have at {side} {chars(bound)} (got {size:,})"
    if kind in ("too_short", "too_long") and size is not None:
        bound = int(ctx.get("min_length" if kind == "too_short" else "max_length") or 0)
        side = "least" if kind == "too_short" else "most"
        return f"{ctx.get('field_type', 'Value')} should have at {side} {items(bound)} (got {size:,})"
    if kind == "union_tag_invalid":
        return f"Input tag does not match any of the expected tags: {ctx.get('expected_tags', '')}"
    message = str(error["msg"])
    if kind.endswith("_parsing") or kind in _PARSE_ERRORS:
        message = message.split(", ", 1)[0]  # the detail quotes the input ("found `h` at 0")
    return message


def _without_input(message: str, given: Any) -> str:
    """``message`` with any quotation of the rejected value replaced (custom validators may echo it)."""
    if isinstance(given, str | int | float) and not isinstance(given, bool):
        for shown in dict.fromkeys((repr(given), str(given))):
            if len(shown) >= 3 and shown in message:
                message = message.replace(shown, "<the value>")
    return message


def convert_errors(
    exc: ValidationError, schema: CoreSchema, errors: Sequence[Mapping[str, Any]] | None = None
) -> list[ArgumentError]:
    """Every pydantic error as an :class:`ArgumentError`, in pydantic's (field) order, deduplicated.
    ``errors`` is ``exc.errors(include_url=False, include_input=True)`` when the caller has it already."""
    out: list[ArgumentError] = []
    seen: set[tuple[str, str]] = set()
    if errors is None:
        errors = exc.errors(include_url=False, include_input=True)  # the input only to measure it
    for error in errors:
        item = (render_path(error["loc"]), _message(error, schema))
        if item not in seen:
            seen.add(item)
            out.append(ArgumentError(*item))
    return out

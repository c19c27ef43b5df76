"""Validation messages that name the path and the rule, never the rejected value.

A rejected value goes into the result, the card, the audit line and the agent's transcript, so
a message must not repeat it (``password: 'hunter2' is too short`` would publish the password).
Both validators speak the same words (pydantic's phrasing): a hand-registered tool's JSON Schema
errors are converted here (:func:`json_schema_errors`), a decorated tool's pydantic errors in
:mod:`milpa_chat.runtime.validation_errors`. Lengths and counts say what was received
(``String should have at most 10 characters (got 14)``); values never do, whatever the field.

Paths are built from argument keys, which a caller chooses: :func:`path_text` clips long parts
and escapes invisible ones, so a path is always short, printable text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from milpa_chat.runtime.redaction import mask_text

__all__ = ["Loc", "chars", "items", "json_schema_errors", "key_text", "path_part", "path_text"]

Loc = tuple[str | int, ...]
_TYPE_WORDS = {
    "integer": "a valid integer",
    "number": "a valid number",
    "string": "a valid string",
    "boolean": "a valid boolean",
    "array": "an array",
    "object": "an object",
    "null": "null",
}
_PART_CHARS = 64
_PATH_PARTS = 16


def path_part(part: object) -> str:
    """One path element as short, printable text (a long key is clipped, an invisible one escaped)."""
    if isinstance(part, int) and not isinstance(part, bool):
        return str(part)
    text = part if isinstance(part, str) else f"<{type(part).__name__}>"
    if len(text) > _PART_CHARS:
        text = text[:_PART_CHARS] + "…"
    if not text.isprintable() or re.search("[\ud800-\udfff]", text):
        text = ascii(text)
    return mask_text(text)


def path_text(loc: Iterable[object]) -> str:
    """``("filters", "tags", 2)`` -> ``"filters.tags.2"``; very deep paths keep both ends."""
    parts = [path_part(p) for p in loc]
    if len(parts) > _PATH_PARTS:
        parts = [*parts[:6], f"…({len(parts) - 12} more)…", *parts[-6:]]
    return ".".join(parts)


def key_text(key: object) -> str:
    """A caller's key quoted for a message (``'x'``), clipped, escaped and masked."""
    text = key if isinstance(key, str) else str(key)
    if len(text) > _PART_CHARS:
        text = text[:_PART_CHARS] + "…"
    return mask_text(repr(text) if text.isprintable() else ascii(text))


def chars(n: int) -> str:
    return f"{n:,} character" + ("" if n == 1 else "s")


def items(n: int) -> str:
    return f"{n:,} item" + ("" if n == 1 else "s")


def _props(n: int) -> str:
    return f"{n:,} propert" + ("y" if n == 1 else "ies")


def _expected(values: Iterable[Any]) -> str:
    shown = [repr(v) for v in values]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


def _type_message(expected: Any) -> str:
    names = [expected] if isinstance(expected, str) else list(expected)
    return "Input should be " + " or ".join(_TYPE_WORDS.get(n, repr(n)) for n in names)


def _size(instance: Any) -> int:
    return len(instance) if isinstance(instance, str | list | tuple | dict) else 0


def _extra_keys(error: Any) -> list[str]:
    schema = error.schema
    props = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    return [k for k in error.instance if k not in props and not any(re.search(p, k) for p in patterns)]


def _rule(kind: str | None, value: Any, instance: Any) -> str:
    """The message of one keyword failing (keywords whose errors are not per-keyword are elsewhere)."""
    n = _size(instance)
    rules: dict[str | None, Any] = {
        "minLength": lambda: f"String should have at least {chars(value)} (got {n:,})",
        "maxLength": lambda: f"String should have at most {chars(value)} (got {n:,})",
        "pattern": lambda: f"String should match pattern {value!r}",
        "minimum": lambda: f"Input should be greater than or equal to {value!r}",
        "maximum": lambda: f"Input should be less than or equal to {value!r}",
        "exclusiveMinimum": lambda: f"Input should be greater than {value!r}",
        "exclusiveMaximum": lambda: f"Input should be less than {value!r}",
        "multipleOf": lambda: f"Input should be a multiple of {value!r}",
        "minItems": lambda: f"List should have at least {items(value)} (got {n:,})",
        "maxItems": lambda: f"List should have at most {items(value)} (got {n:,})",
        "uniqueItems": lambda: "List should not contain duplicate items",
        "minProperties": lambda: f"Object should have at least {_props(value)} (got {n:,})",
        "maxProperties": lambda: f"Object should have at most {_props(value)} (got {n:,})",
        "enum": lambda: f"Input should be {_expected(value)}",
        "const": lambda: f"Input should be {value!r}",
        "type": lambda: _type_message(value),
        "contains": lambda: "List should contain an item matching the 'contains' schema",
        "minContains": lambda: f"List should contain at least {items(value)} matching the 'contains' schema",
        "maxContains": lambda: f"List should contain at most {items(value)} matching the 'contains' schema",
        "not": lambda: "Not allowed here" if value in ({}, True) else "Input should not match the 'not' schema",
        "unevaluatedProperties": lambda: "Object has properties that no part of the schema allows",
        "unevaluatedItems": lambda: "List has items that no part of the schema allows",
        "additionalProperties": lambda: "Object has properties that the schema does not allow",
        None: lambda: "No value is allowed here",
    }
    build = rules.get(kind)
    return build() if build is not None else f"Input is not valid (the schema's {kind!r} rule)"


def _convert(error: Any) -> list[tuple[Loc, str]]:
    path: Loc = tuple(error.absolute_path)
    kind, value, instance = error.validator, error.validator_value, error.instance
    if kind == "required" and isinstance(instance, dict):
        return [((*path, n), "Missing required field") for n in value if n not in instance]
    if kind == "dependentRequired" and isinstance(instance, dict):
        return [
            ((*path, dep), f"Missing required field (required when {key_text(prop)} is present)")
            for prop, deps in value.items() if prop in instance for dep in deps if dep not in instance
        ]  # fmt: skip
    if kind == "additionalProperties" and value is False and isinstance(instance, dict):
        accepted = list(error.schema.get("properties", {}))
        listed = f"accepted properties: {', '.join(accepted)}" if accepted else "this object takes no properties"
        return [((*path, k), f"Unknown property {key_text(k)}; {listed}") for k in _extra_keys(error)]
    if kind == "items" and value is False and isinstance(instance, list):
        allowed = len(error.schema.get("prefixItems", []))
        return [(path, f"List should have at most {items(allowed)} (got {len(instance):,})")]
    if kind in ("anyOf", "oneOf"):
        return [(path, _choice_message(error))]
    message = _rule(kind, value, instance)
    if "propertyNames" in error.absolute_schema_path:
        message = f"Property name: {message}"
    return [(path, message)]


def _choice_message(error: Any) -> str:
    from jsonschema.exceptions import best_match

    context: Sequence[Any] = error.context or ()
    if not context:  # oneOf: more than one choice matched
        return "Input should match exactly one of the allowed shapes, but matches more than one"
    if all(e.validator == "type" and not e.relative_path for e in context):
        return _type_message([e.validator_value for e in context])
    best = best_match(context)
    sub = _convert(best)
    where, message = sub[0] if sub else ((), "Input is not valid")
    inner = path_text(where[len(error.absolute_path) :])
    closest = f"{inner}: {message}" if inner else message
    return f"Input matches none of the allowed shapes (closest: {closest})"


def _sort_key(loc: Loc) -> tuple[tuple[int, str], ...]:
    return tuple((0, f"{p:020d}") if isinstance(p, int) else (1, p) for p in loc)


def json_schema_errors(validator: Any, instance: Any) -> list[tuple[Loc, str]]:
    """Every error of ``instance``, as ``(location, message)``, sorted by location, deduplicated."""
    found: list[tuple[Loc, str]] = []
    seen: set[tuple[Loc, str]] = set()
    for error in validator.iter_errors(instance):
        for item in _convert(error):
            if item not in seen:
                seen.add(item)
                found.append(item)
    return sorted(found, key=lambda item: _sort_key(item[0]))

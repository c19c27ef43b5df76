"""Parse chat commands into tool arguments.

Three forms, all checked against the tool's JSON schema afterwards by the pipeline::

    /delete_note 5                     positional: required parameters first, then the rest
    /search_notes query="a b" page=2   key=value, shell-style quoting
    /search_notes {"query": "a b"}     a JSON object

Values are read by the parameter's schema type: ``page=2`` is the integer 2, ``tags=a,b`` (or
``tags=["a","b"]``) a list, ``archived=yes`` true. Anything that does not parse is kept as text
so the validator reports it with the field's name.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

__all__ = ["CommandError", "ParsedCommand", "convert_value", "parse_arguments", "parse_command"]

_TRUE = {"true", "yes", "y", "on", "1"}
_FALSE = {"false", "no", "n", "off", "0"}


class CommandError(ValueError):
    """A command line that cannot be turned into arguments; the message says how to write it."""


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    name: str
    rest: str


def parse_command(text: str, bot_username: str | None = None) -> ParsedCommand:
    """``/name@bot rest`` -> ``ParsedCommand("name", "rest")``."""
    head, _, rest = text.strip().partition(" ")
    name = head[1:] if head.startswith("/") else head
    name, _, target = name.partition("@")
    if target and bot_username and target.lower() != bot_username.lower():
        raise CommandError(f"/{name} is addressed to @{target}, not to this bot")
    return ParsedCommand(name, rest.strip())


def _types(prop: dict[str, Any]) -> list[str]:
    t = prop.get("type")
    if isinstance(t, list):
        return [x for x in t if isinstance(x, str)]
    if isinstance(t, str):
        return [t]
    out: list[str] = []
    for alt in prop.get("anyOf", []) + prop.get("oneOf", []):
        if isinstance(alt, dict):
            out += _types(alt)
    return out


def _convert(raw: str, prop: dict[str, Any]) -> Any:
    types = _types(prop)
    text = raw.strip()
    if "null" in types and text.lower() in ("null", "none"):
        return None
    if text[:1] in "[{" and ("array" in types or "object" in types):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return raw
    for t in types:
        if t == "integer":
            try:
                return int(text)
            except ValueError:
                continue
        if t == "number":
            try:
                return float(text) if any(c in text for c in ".eE") else int(text)
            except ValueError:
                continue
        if t == "boolean" and text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        if t == "array":
            items = prop.get("items") if isinstance(prop.get("items"), dict) else {}
            return [_convert(p, items or {}) for p in text.split(",") if p.strip()]
    return raw


def convert_value(raw: str, prop: dict[str, Any]) -> Any:
    """One typed value read by its parameter's schema (``"120"`` for a number is 120); text that does
    not parse stays text, so the validator names the field."""
    return _convert(raw, prop)


def _order(schema: dict[str, Any]) -> list[str]:
    props = list(schema.get("properties", {}))
    required = [p for p in schema.get("required", []) if p in props]
    return required + [p for p in props if p not in required]


def parse_arguments(rest: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Turn the text after a command into an arguments object for a tool with ``schema``."""
    rest = rest.strip()
    if not rest:
        return {}
    props: dict[str, Any] = schema.get("properties", {})
    if rest.startswith("{"):
        try:
            value = json.loads(rest)
        except json.JSONDecodeError as exc:
            raise CommandError(
                f"the arguments look like JSON but do not parse ({exc.msg}, column {exc.colno})"
            ) from exc
        if not isinstance(value, dict):
            raise CommandError('JSON arguments must be an object, like {"page": 2}')
        return value
    try:
        words = shlex.split(rest)
    except ValueError as exc:
        raise CommandError(f"cannot read the arguments ({exc}); close every quote") from exc
    args: dict[str, Any] = {}
    positional = [p for p in _order(schema)]
    for word in words:
        key, eq, raw = word.partition("=")
        if eq and key.isidentifier():
            if key in args:
                raise CommandError(f"{key} is given twice")
            args[key] = _convert(raw, props.get(key, {}))
            continue
        free = [p for p in positional if p not in args]
        if not free:
            names = ", ".join(props) or "none"
            raise CommandError(f"too many values: {word!r} has no parameter left (parameters: {names})")
        args[free[0]] = _convert(word, props.get(free[0], {}))
    return args

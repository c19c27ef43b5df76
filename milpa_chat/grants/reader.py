"""The strict reader of a signed grant: :func:`read_grant_fields` (``StandingGrant.from_json``), :func:`grant_fields`.

The text a person signs is read as it is shown: at most :data:`LONGEST` UTF-8 bytes (checked before
a byte is parsed), valid UTF-8 with no BOM, one JSON object; each key said once at every depth;
lists written as arrays and maps as objects; whole numbers only; no ``\\u`` escape of what names
are made of (ASCII letters and digits, ``:`` ``.`` ``_`` ``-`` and the space) anywhere, and in the
texts that are not sentences (a seat, the expiry, argument names and values) no escape of any
printable ASCII character at all (``\\/`` included; ``\\"`` and ``\\\\`` are read). Nothing is trimmed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from milpa_chat.command.canonical import Canonical
from milpa_chat.grants.calls import NamedCall
from milpa_chat.grants.ceiling import read_ceiling
from milpa_chat.grants.errors import InvalidGrant
from milpa_chat.grants.parts import LONGEST, Condition, Falsifier
from milpa_chat.grants.rules import INT64, key_in_path

__all__ = ["grant_fields", "read_grant_fields"]

_LITERAL: Final = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_ESCAPE: Final = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)
_NAME_CHARACTERS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:._- ")
_WHOLE: Final = re.compile(r"-?(0|[1-9][0-9]*)")
_TOP_REQUIRED: Final = ("id", "to", "operations", "ceiling", "conditions", "falsifier", "undo")
_TOP_OPTIONAL: Final = ("expires_at", "supersedes", "lifts")
Path = tuple[str | int, ...]


def _spell(path: Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{key_in_path(part)}" if out else key_in_path(part))
    return out or "$"


# --------------------------------------------------------------------------- the text
def read_grant_fields(text: str | bytes) -> dict[str, Any]:
    """The fields of the grant a signed text spells (``StandingGrant(**fields)``), or :class:`InvalidGrant`
    naming what was wrong and how to write it."""
    raw = _decoded(text)
    try:
        data = json.loads(
            raw,
            object_pairs_hook=_once,
            parse_float=_no_float,
            parse_int=_whole,
            parse_constant=_no_float,
        )
    except json.JSONDecodeError as exc:
        raise InvalidGrant("$", f"is not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise InvalidGrant("$", "is nested deeper than a grant ever is") from None
    if not isinstance(data, dict):
        raise InvalidGrant("$", "a grant is one JSON object {...}")
    _check_escapes(raw, data)
    return grant_fields(data)


def _decoded(text: str | bytes) -> str:
    if isinstance(text, bytes | bytearray):
        if len(text) > LONGEST:
            raise InvalidGrant("$", f"is {len(text)} bytes long; a grant is at most {LONGEST} bytes (256 KB)")
        if bytes(text[:3]) == b"\xef\xbb\xbf":
            raise InvalidGrant("$", "begins with a byte-order mark: save it as UTF-8 without a BOM")
        try:
            return bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidGrant("$", f"is not valid UTF-8 (byte {exc.start})") from None
    if not isinstance(text, str):
        raise TypeError(f"StandingGrant.from_json takes the signed text (str or bytes), got {type(text).__name__}")
    if len(text) > LONGEST:
        raise InvalidGrant("$", f"is {len(text)}+ bytes long; a grant is at most {LONGEST} bytes (256 KB)")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidGrant("$", f"is not valid Unicode (a lone surrogate at character {exc.start})") from None
    if size > LONGEST:
        raise InvalidGrant("$", f"is {size} bytes long; a grant is at most {LONGEST} bytes (256 KB)")
    if text.startswith("\ufeff"):
        raise InvalidGrant("$", "begins with a byte-order mark: save it as UTF-8 without a BOM")
    return text


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise InvalidGrant(
                Canonical.shown(key), "is said twice in one object; say each key once (a reader would keep the last)"
            )
        found[key] = value
    return found


def _no_float(literal: str) -> Any:
    raise InvalidGrant(
        Canonical.shown(literal), "is not a whole number; a grant holds whole numbers only (write 7, not 7.0 or 7e0)"
    )


def _whole(literal: str) -> int:
    value = int(literal) if len(literal) <= 20 else INT64[1] + 1
    if _WHOLE.fullmatch(literal) is None or literal == "-0" or not INT64[0] <= value <= INT64[1]:
        raise InvalidGrant(Canonical.shown(literal), "is not a whole number a grant can hold (signed 64-bit, not -0)")
    return value


# ------------------------------------------------------------------------- escapes
def _flags(raw: str) -> Iterator[tuple[str | None, bool]]:
    """For each string literal in order: the first name character it escapes, and whether it escapes printable ASCII."""
    for literal in _LITERAL.finditer(raw):
        named: str | None = None
        printable = False
        for escape in _ESCAPE.finditer(literal.group()):
            body = escape.group(1)
            char = chr(int(body[1:], 16)) if len(body) == 5 else body
            if len(body) == 5 and char in _NAME_CHARACTERS and named is None:
                named = char
            if (len(body) == 5 and 0x20 <= ord(char) <= 0x7E) or body == "/":
                printable = True
        yield named, printable


def _texts(value: Any, path: Path) -> Iterator[tuple[str, Path, bool]]:
    """Every decoded text in document order: (text, path, whether it is a key)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key, (*path, key), True
            yield from _texts(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _texts(item, (*path, i))
    elif isinstance(value, str):
        yield value, path, False


def _not_a_sentence(path: Path, is_key: bool) -> bool:
    """A seat, the expiry, an argument's name or value (fixed or free): texts where no printable escape is read."""
    if len(path) >= 2 and path[-2] == "arguments":
        return True
    if is_key:
        return False
    return (
        (len(path) == 2 and path[0] == "to")
        or path == ("expires_at",)
        or (len(path) >= 2 and isinstance(path[-1], int) and path[-2] in ("free", "escalates_on"))
    )


def _check_escapes(raw: str, data: dict[str, Any]) -> None:
    for (named, printable), (text, path, is_key) in zip(_flags(raw), _texts(data, ()), strict=True):
        where = _spell(path) + (" (a key)" if is_key else "")
        if any(0xD800 <= ord(c) <= 0xDFFF for c in text):
            raise InvalidGrant(where, "holds a lone surrogate escape (\\ud800..\\udfff), which is not text")
        if named is not None:
            raise InvalidGrant(
                where, f"spells {named!r} as a \\u escape; names are written plainly, so write {named!r} itself"
            )
        if printable and _not_a_sentence(path, is_key):
            raise InvalidGrant(
                where,
                "escapes a printable ASCII character (\\uXXXX or \\/); seats, the expiry and arguments are "
                "written as they read: write the character itself",
            )


# --------------------------------------------------------------------------- the map
def _map(where: str, value: object, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidGrant(where, f"takes an object {{{', '.join(required)}}}, got {Canonical.shown(value)}")
    known = (*required, *optional)
    for key in value:
        if key not in known:
            raise InvalidGrant(
                f"{where}.{key_in_path(key)}" if where != "$" else key_in_path(key),
                f"is not read here (a line the judge would ignore is a limit nobody keeps); the keys are "
                f"{', '.join(known)}",
            )
    for key in required:
        if key not in value:
            raise InvalidGrant(f"{where}.{key}" if where != "$" else key, "is missing; write it")
    return value


def _list(where: str, value: object) -> list[Any]:
    if not isinstance(value, list):
        raise InvalidGrant(where, f"is a list: write it as a JSON array [...], got {Canonical.shown(value)}")
    return value


def _text(where: str, value: object) -> str:
    if not isinstance(value, str):
        raise InvalidGrant(where, f"takes a text, got {Canonical.shown(value)}")
    return value


def _call(where: str, data: object, *, measuring: bool) -> NamedCall:
    keys = ("operation", "arguments", "free") if measuring else ("operation", "arguments")
    spelled = _map(where, data, keys)
    arguments = spelled["arguments"]
    if not isinstance(arguments, Mapping):
        raise InvalidGrant(
            f"{where}.arguments", f"is a map: write it as a JSON object {{...}}, got {Canonical.shown(arguments)}"
        )
    operation = _text(f"{where}.operation", spelled["operation"])
    free = _list(f"{where}.free", spelled["free"]) if measuring else []
    try:
        return NamedCall(operation, arguments, tuple(free))
    except InvalidGrant as exc:
        raise exc.within(where) from None


def _part(where: str, build: Any, *args: Any) -> Any:
    try:
        return build(*args)
    except InvalidGrant as exc:
        raise exc.within(where) from None


def grant_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a grant from a decoded map, held to every rule a map can show (it cannot show a repeated
    key or an escape); the document's own constructor checks the rest."""
    top = _map("$", data, _TOP_REQUIRED, _TOP_OPTIONAL)
    operations = [
        _call(f"operations[{i}]", entry, measuring=False)
        for i, entry in enumerate(_list("operations", top["operations"]))
    ]
    conditions = []
    for i, item in enumerate(_list("conditions", top["conditions"])):
        where = f"conditions[{i}]"
        spelled = _map(where, item, ("name", "statement", "by"))
        by = _call(f"{where}.by", spelled["by"], measuring=True)
        conditions.append(_part(where, Condition, spelled["name"], spelled["statement"], by))
    spelled = _map("falsifier", top["falsifier"], ("name", "statement", "by", "window"))
    by = _call("falsifier.by", spelled["by"], measuring=True)
    falsifier = _part("falsifier", Falsifier, spelled["name"], spelled["statement"], by, spelled["window"])
    expires_at = top.get("expires_at")
    if expires_at is not None:
        _text("expires_at", expires_at)
    supersedes = top.get("supersedes")
    return dict(
        id=top["id"],
        to=tuple(_list("to", top["to"])),
        operations=tuple(operations),
        ceiling=read_ceiling("ceiling", top["ceiling"]),
        conditions=tuple(conditions),
        falsifier=falsifier,
        undo=top["undo"],
        expires_at=expires_at,
        supersedes=None if supersedes is None else tuple(_list("supersedes", supersedes)),
        lifts=top.get("lifts"),
    )

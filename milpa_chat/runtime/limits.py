"""Payload limits: the worst case of one call stays cheap, checked before the validator runs.

A caller (a chat user, an agent, an MCP client) controls the arguments of a call. Without limits
one call with a million-item array, a dict nested 10,000 deep, an integer of 100,000 digits or a
lone surrogate in a string costs seconds, or raises deep inside the validator, the store or the
JSON encoder. :func:`check_payload` walks the arguments once, **iteratively** (a 10,000-deep dict
is cheap and never a ``RecursionError``), and stops as soon as a size limit is hit, so its own cost
is bounded by the limits, not by the payload.

The defaults are far above any real chat or agent call (an LLM's whole context is a few hundred
kilobytes):

==================  ==========  ===================================================================
``max_depth``       64          nesting of objects/arrays (the arguments object itself is level 1)
``max_items``       10,000      values inside objects and arrays, counted over the whole payload
``max_string``      1,000,000   characters of one string (or one object key); bytes count as well
``max_bytes``       4,000,000   approximate size of the arguments as UTF-8 JSON text
``max_int_digits``  4,000       decimal digits of one integer (Python refuses ``str()`` above 4,300)
==================  ==========  ===================================================================

Always rejected, whatever the limits: ``NaN`` and ``±Infinity`` (not JSON), strings and keys with
a lone surrogate (``"\\ud800"``: not Unicode text, it cannot be stored, logged or sent), and object
keys that are not strings. Messages name the path and the limit, never the value.

How the pipeline calls it (``ToolRegistry.call``), on the raw argument mapping, right after it is
known to be a ``Mapping`` and before anything else reads it (the ``confirm_token`` /
``verification_id`` replay lookup, the validator)::

    from milpa_chat.runtime.limits import PayloadLimits, check_payload

    # ToolRegistry.__init__(..., limits: PayloadLimits | None = None)
    self.limits = limits if limits is not None else PayloadLimits()

    # ToolRegistry.call
    try:
        check_payload(args, self.limits)
    except InvalidArguments as exc:
        return gates.invalid(self.audit, tool.name, ctx, t0, exc)   # VALIDATION_ERROR

:func:`payload_problems` returns the same problems as a list instead of raising.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Final

from milpa_chat.errors import DeclarationError, InvalidOptionError
from milpa_chat.runtime.definition import ArgumentError, InvalidArguments

__all__ = ["DEFAULT_LIMITS", "PayloadLimits", "check_payload", "payload_problems"]

#: At most this many problems are reported (a 10,000-item list of NaN is one kind of mistake).
MAX_PROBLEMS: Final = 20
_SURROGATE = re.compile("[\ud800-\udfff]")
_LOG2_10: Final = math.log2(10)
_SMALL_INT: Final = 10**18
_SHORT: Final = 4096
#: How the messages tell a developer to raise a limit.
_CONFIGURE: Final = "ToolRegistry(limits=PayloadLimits({field}=...))"


@dataclass(frozen=True, slots=True)
class PayloadLimits:
    """How big the arguments of one call may be (see the module docstring for each field)."""

    max_depth: int = 64
    max_items: int = 10_000
    max_string: int = 1_000_000
    max_bytes: int = 4_000_000
    max_int_digits: int = 4_000

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                wrong_type = isinstance(value, bool) or not isinstance(value, int)
                raise (DeclarationError if wrong_type else InvalidOptionError)(
                    f"PayloadLimits({f.name}=...) must be a positive whole number, got {value!r}; "
                    f"e.g. PayloadLimits({f.name}={f.default!r})"
                )

    @property
    def fast_path(self) -> bool:
        """True when a flat dict of up to 64 short strings and small numbers is within these limits."""
        return (
            self.max_string >= _SHORT and self.max_int_digits > 18 and self.max_items >= 64
            and self.max_bytes >= 64 * (256 + _SHORT + 30)
        )  # fmt: skip

    @property
    def max_int_bits(self) -> int:
        """Integers with more bits than this have more than ``max_int_digits`` digits."""
        return math.ceil(self.max_int_digits * _LOG2_10)


DEFAULT_LIMITS: Final = PayloadLimits()


def check_payload(value: Any, limits: PayloadLimits = DEFAULT_LIMITS) -> None:
    """Raise :class:`InvalidArguments` (every problem, with its path) when ``value`` breaks ``limits``."""
    if _simple(value) and (limits is DEFAULT_LIMITS or limits.fast_path):
        return
    problems = payload_problems(value, limits)
    if problems:
        raise InvalidArguments(problems)


def payload_problems(value: Any, limits: PayloadLimits = DEFAULT_LIMITS) -> list[ArgumentError]:
    """Every problem of ``value`` under ``limits`` (at most ``MAX_PROBLEMS``), in walk order."""
    return _Walk(limits).run(value)


def _simple(args: Any) -> bool:
    """The common case, decided without the walk: a flat dict of short strings and small numbers."""
    if type(args) is not dict or len(args) > 64:
        return False
    for k, v in args.items():
        if type(k) is not str or len(k) > 256 or not k.isascii():
            return False
        kind = type(v)
        if kind is str:
            if len(v) > _SHORT or not v.isascii():
                return False
        elif kind is int:
            if not -_SMALL_INT < v < _SMALL_INT:
                return False
        elif not (kind is bool or v is None):
            return False
    return True


# A path is a linked list (key, parent) built only when a problem is reported.
_Path = tuple[Any, Any] | None


def _path_text(path: _Path) -> str:
    parts: list[str] = []
    while path is not None:
        key, path = path
        parts.append(_part(key))
    parts.reverse()
    if len(parts) > 12:
        parts = [*parts[:5], f"…({len(parts) - 10} more)…", *parts[-5:]]
    return ".".join(parts)


def _part(key: Any) -> str:
    if isinstance(key, int):
        return str(key)
    if not isinstance(key, str):
        return f"<{type(key).__name__} key>"
    text = key if len(key) <= 40 else key[:40] + "…"
    if not text.isprintable() or _SURROGATE.search(text):
        text = ascii(text)
    return text


class _Walk:
    __slots__ = ("bytes", "items", "limits", "problems", "short", "stopped")

    def __init__(self, limits: PayloadLimits) -> None:
        self.limits = limits
        self.short = min(_SHORT, limits.max_string)
        self.items = 0
        self.bytes = 0
        self.problems: list[ArgumentError] = []
        self.stopped = False

    def report(self, path: _Path, message: str) -> None:
        self.problems.append(ArgumentError(_path_text(path), message))
        if len(self.problems) >= MAX_PROBLEMS:
            self.stopped = True

    def stop(self, path: _Path, message: str) -> None:
        self.report(path, message)
        self.stopped = True

    def run(self, root: Any) -> list[ArgumentError]:
        limits = self.limits
        stack: list[tuple[Any, int, _Path]] = [(root, 0, None)]
        pop, extend = stack.pop, stack.extend
        short = min(_SHORT, limits.max_string)
        small = _SMALL_INT if limits.max_int_digits > 18 else 0
        while stack and not self.stopped:
            if self.bytes > limits.max_bytes:
                self.stop(None, _too_big(limits))
                break
            value, depth, path = pop()
            kind = type(value)
            if kind is str and len(value) <= short and value.isascii():
                self.bytes += len(value) + 2
                continue
            if (kind is int and -small < value < small) or kind is bool or value is None:
                self.bytes += 8
                continue
            if kind is dict or (kind is not list and isinstance(value, Mapping)):
                walk = self._mapping
            elif kind is list or isinstance(value, list | tuple | set | frozenset):
                walk = self._sequence
            else:
                self._leaf(value, path)
                continue
            if depth >= limits.max_depth:  # the arguments object is level 1
                self.stop(path, _too_deep(limits))
                break
            children = walk(value, depth, path)
            children.reverse()  # walk in document order
            extend(children)
        if self.bytes > limits.max_bytes and not self.stopped:
            self.stop(None, _too_big(limits))
        return self.problems

    def _count(self, size: int, path: _Path) -> bool:
        self.items += size
        self.bytes += 2 + size  # brackets and separators
        if self.items > self.limits.max_items:
            self.stop(path, _too_many(self.limits))
            return False
        return True

    def _mapping(self, value: Mapping[Any, Any], depth: int, path: _Path) -> list[tuple[Any, int, _Path]]:
        if not self._count(len(value), path):
            return []
        out: list[tuple[Any, int, _Path]] = []
        for key, child in value.items():
            if type(key) is str and len(key) <= self.short and key.isascii():
                self.bytes += len(key) + 3
            elif isinstance(key, str):
                self._text(key, (key, path), "object key")
            else:
                self.report(path, f"an object key is of type {type(key).__name__}; JSON object keys are strings")
            out.append((child, depth + 1, (key, path)))
        return out

    def _sequence(self, value: Any, depth: int, path: _Path) -> list[tuple[Any, int, _Path]]:
        if not self._count(len(value), path):
            return []
        return [(child, depth + 1, (i, path)) for i, child in enumerate(value)]

    def _leaf(self, value: Any, path: _Path) -> None:
        kind = type(value)
        if kind is str or isinstance(value, str):
            self._text(value, path, "string")
        elif kind is bool or value is None:
            self.bytes += 5
        elif kind is int or isinstance(value, int):
            bits = value.bit_length()
            if bits > self.limits.max_int_bits:
                self.report(path, _too_long_int(self.limits, bits))
            self.bytes += int(bits / _LOG2_10) + 2
        elif kind is float or isinstance(value, float):
            if not math.isfinite(value):
                word = "NaN" if math.isnan(value) else "Infinity"
                self.report(path, f"{word} is not a JSON number; send a finite number or null")
            self.bytes += 24
        elif isinstance(value, bytes | bytearray | memoryview):
            size = len(value) if not isinstance(value, memoryview) else value.nbytes
            if size > self.limits.max_string:
                self.report(path, _too_long(self.limits, size, "bytes"))
            self.bytes += size
        else:  # a model, a date, an enum member...: the validator decides; it is counted once
            self.bytes += 8

    def _text(self, text: str, path: _Path, what: str) -> None:
        size = len(text)
        if size > self.limits.max_string:
            self.report(path, _too_long(self.limits, size, what))
        if text.isascii():
            self.bytes += size + 2
        elif _SURROGATE.search(text) is not None:
            self.bytes += 3 * size + 2
            self.report(
                path,
                f"{what} contains a lone surrogate (U+D800 to U+DFFF), which is not Unicode text; "
                f"send valid UTF-8 text",
            )
        else:
            self.bytes += len(text.encode("utf-8")) + 2


def _hint(field: str) -> str:
    return f"(limit PayloadLimits.{field}; configure it with {_CONFIGURE.format(field=field)})"


def _too_deep(limits: PayloadLimits) -> str:
    return f"nested deeper than {limits.max_depth:,} levels {_hint('max_depth')}"


def _too_many(limits: PayloadLimits) -> str:
    return f"the arguments hold more than {limits.max_items:,} values in total {_hint('max_items')}"


def _too_big(limits: PayloadLimits) -> str:
    return f"the arguments are larger than {limits.max_bytes:,} bytes as JSON {_hint('max_bytes')}"


def _too_long(limits: PayloadLimits, size: int, what: str) -> str:
    unit = "bytes" if what == "bytes" else "characters"
    return f"{what} of {size:,} {unit} is longer than {limits.max_string:,} {_hint('max_string')}"


def _too_long_int(limits: PayloadLimits, bits: int) -> str:
    digits = int(bits / _LOG2_10) + 1
    return f"integer of about {digits:,} digits has more than {limits.max_int_digits:,} {_hint('max_int_digits')}"

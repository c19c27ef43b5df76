"""The rules every text, name and value of a grant is held to, in code and in the reader alike."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Final

from milpa_chat.command.canonical import Canonical
from milpa_chat.grants.errors import InvalidGrant

__all__ = [
    "INT64",
    "check_argument_name",
    "check_fixed_value",
    "check_one_line",
    "check_operation_name",
    "check_text_type",
    "fixable",
    "is_operation_name",
    "key_in_path",
    "parse_expiry",
    "same_value",
    "spell_expiry",
]

_OPERATION: Final = re.compile(r"[A-Za-z0-9]+(-[A-Za-z0-9]+)*([:._][A-Za-z0-9]+(-[A-Za-z0-9]+)*)*")
_ARGUMENT: Final = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
_FIXED_TEXT: Final = re.compile(r"[!-~]+( [!-~]+)*")
_EXPIRY: Final = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(Z|([+-])(\d{2}):(\d{2}))")
#: The whole numbers a grant may fix: signed 64-bit.
INT64: Final = (-(2**63), 2**63 - 1)


_PLAIN_KEY: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def key_in_path(key: object) -> str:
    """A key as a field path names it: as it is when plain (``channel``), else as JSON spells it (``"\\u007fx"``)."""
    return key if isinstance(key, str) and _PLAIN_KEY.fullmatch(key) else Canonical.shown(key)


def check_text_type(field: str, value: object) -> str:
    """``value`` if it is exactly a ``str``; a ``TypeError`` naming the field otherwise (no string forms)."""
    if type(value) is not str:
        raise TypeError(f"{field}: takes a text (str), got {type(value).__name__} {value!r}; write the name as text")
    return value


def check_one_line(field: str, value: object) -> str:
    """A text that :meth:`Canonical.one_line` takes; refused naming the field and what to change."""
    if type(value) is not str:
        raise InvalidGrant(field, f"takes one line of text, got {Canonical.shown(value)}")
    if not Canonical.one_line(value):
        raise InvalidGrant(
            field,
            f"{Canonical.shown(value)} is not one line of plain text: write it without spaces or line breaks "
            f"around it, without control, format or invisible characters, and not empty",
        )
    return value


def is_operation_name(text: object) -> bool:
    """Whether ``text`` is a ``str`` a grant can name an operation by (``release:publish``; not ``a__b``, ``_x``).

    A host asks it before building a :class:`~milpa_chat.grants.StandingCall` for a tool whose
    name it did not choose: no grant covers, or may be naming, a call to anything else.
    """
    return type(text) is str and _OPERATION.fullmatch(text) is not None


def check_operation_name(field: str, value: object) -> str:
    """An operation name: exactly a ``str``, plain by its own pattern (``release:publish``), nothing around it."""
    name = check_text_type(field, value)
    if _OPERATION.fullmatch(name) is None:
        raise InvalidGrant(
            field,
            f"{Canonical.shown(name)} is not an operation name: write letters and digits joined by single "
            f"dashes, in segments separated by one ':', '.' or '_' (e.g. \"release:publish\"), with nothing "
            f"before or after it",
        )
    return name


def check_argument_name(field: str, value: object) -> str:
    """An argument name: an ASCII letter, then letters, digits or underscores, at most 64 in all."""
    if type(value) is not str or _ARGUMENT.fullmatch(value) is None:
        raise InvalidGrant(
            field,
            f"{Canonical.shown(value)} is not an argument name: start with an ASCII letter, then letters, "
            f'digits or underscores, at most 64 characters (e.g. "channel")',
        )
    return value


def fixable(value: object) -> bool:
    """Whether a grant can fix an argument to ``value``: visible-ASCII text, a 64-bit whole number, a boolean."""
    if type(value) is str:
        return _FIXED_TEXT.fullmatch(value) is not None
    if type(value) is int:
        return INT64[0] <= value <= INT64[1]
    return type(value) is bool


def check_fixed_value(field: str, value: object) -> str | int | bool:
    if not fixable(value):
        raise InvalidGrant(
            field,
            f'{Canonical.shown(value)} cannot be a fixed value: fix text of visible ASCII ("!" to "~", single '
            f"spaces inside, none around, never empty), a whole number, or true/false",
        )
    assert isinstance(value, str | int)  # bool is an int
    return value


def same_value(a: Any, b: Any) -> bool:
    """Same JSON type and same value, byte for byte (``True`` is not ``1``, ``"7"`` is not ``7``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def parse_expiry(field: str, value: object) -> datetime:
    """``YYYY-MM-DDTHH:MM:SS`` then ``Z`` or ``±HH:MM``, a real instant whose UTC spelling is that form too.

    A ``datetime`` is taken when it is timezone-aware, whole seconds, and within years 1..9999 in UTC.
    """
    if isinstance(value, datetime):
        return _aware_expiry(field, value)
    if type(value) is not str:
        raise InvalidGrant(field, f'takes a date such as "2026-11-01T00:00:00Z", got {Canonical.shown(value)}')
    match = _EXPIRY.fullmatch(value)
    if match is None or not value.isascii():
        raise InvalidGrant(
            field,
            f"{Canonical.shown(value)} is not of the one form YYYY-MM-DDTHH:MM:SS followed by Z or +HH:MM/-HH:MM "
            f'(e.g. "2026-11-01T00:00:00Z")',
        )
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    sign, off_h, off_m = match.group(8), int(match.group(9) or 0), int(match.group(10) or 0)
    if off_h > 23 or off_m > 59:
        raise InvalidGrant(field, f"{Canonical.shown(value)} has an offset that is not one: hours 00-23, minutes 00-59")
    if year == 0:
        raise InvalidGrant(field, f"{Canonical.shown(value)} is outside years 0001-9999 once spelled in UTC")
    offset = timedelta(hours=off_h, minutes=off_m) * (-1 if sign == "-" else 1)
    try:
        local = datetime(year, month, day, hour, minute, second, tzinfo=timezone(offset))
    except ValueError:
        raise InvalidGrant(
            field, f"{Canonical.shown(value)} is not a real instant (no such day, hour or second)"
        ) from None
    return _aware_expiry(field, local)


def _aware_expiry(field: str, value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidGrant(field, "takes a timezone-aware datetime (e.g. datetime(2026, 11, 1, tzinfo=UTC))")
    if value.microsecond:
        raise InvalidGrant(field, "is given to the second: drop the fraction of a second")
    try:
        utc = value.astimezone(UTC)
    except (OverflowError, ValueError):
        utc = None
    if utc is None or not 1 <= utc.year <= 9999 or value.year < 1:
        raise InvalidGrant(field, f"{value.isoformat()} is outside years 0001-9999 once spelled in UTC")
    return utc


def spell_expiry(value: datetime) -> str:
    """The canonical spelling of an expiry: the instant in UTC with ``Z``."""
    u = value.astimezone(UTC)
    return f"{u.year:04d}-{u.month:02d}-{u.day:02d}T{u.hour:02d}:{u.minute:02d}:{u.second:02d}Z"

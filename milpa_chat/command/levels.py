"""The five effect axes and their levels.

Each level has a ``weight``: how much scrutiny it demands, higher is wider. ``UNKNOWN`` is at the
top of every axis (level with ``IRREVERSIBLE`` on reversibility): not knowing is never cheaper than
knowing something bad.

Two reversibility pairs share a weight (``NOT_APPLICABLE``/``GUARANTEED`` at 0,
``IRREVERSIBLE``/``UNKNOWN`` at 3). :attr:`rank` orders every level of an axis totally — the weight
first, then ``NOT_APPLICABLE`` below ``GUARANTEED`` and ``IRREVERSIBLE`` below ``UNKNOWN`` — so that
``join`` and ``meet`` never depend on the order of their operands.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TypeVar

from milpa_chat.command.errors import InvalidEffectProfile

__all__ = ["AXES", "Authority", "Externality", "Level", "Mutation", "Reversibility", "Subject", "level_of"]

#: The axis names, in the order every profile lists them.
AXES: tuple[str, ...] = ("mutation", "externality", "reversibility", "authority", "subject")


class Level(StrEnum):
    """A level of one effect axis; its value is the string it is stored as (``"write_as_user"``)."""

    @property
    def weight(self) -> int:
        """How much scrutiny this level demands."""
        return _WEIGHTS[(type(self), self.value)]

    @property
    def rank(self) -> int:
        """A total order of the axis: the weight, ties broken toward the lower label."""
        return _RANKS[(type(self), self.value)]


class Mutation(Level):
    """Whether and how lastingly the operation changes state."""

    NONE = "none"
    EPHEMERAL = "ephemeral"
    PERSISTENT = "persistent"
    UNKNOWN = "unknown"


class Externality(Level):
    """How far the effect reaches beyond the caller."""

    NONE = "none"
    SAME_PRINCIPAL = "same_principal"
    THIRD_PARTY = "third_party"
    PUBLIC = "public"
    UNKNOWN = "unknown"


class Reversibility(Level):
    """Whether the change can be taken back, and how."""

    GUARANTEED = "guaranteed"
    NOT_APPLICABLE = "not_applicable"
    COMPENSATABLE = "compensatable"
    MANUAL_RECOVERY = "manual_recovery"
    IRREVERSIBLE = "irreversible"
    UNKNOWN = "unknown"


class Authority(Level):
    """Whose authority the operation spends."""

    NONE = "none"
    READ = "read"
    WRITE_AS_USER = "write_as_user"
    PRIVILEGED = "privileged"
    UNKNOWN = "unknown"


class Subject(Level):
    """What the change is made of."""

    NONE = "none"
    DATA = "data"
    CONFIGURATION = "configuration"
    EXECUTABLE = "executable"
    UNKNOWN = "unknown"


_WEIGHTS_BY_AXIS: dict[type[Level], dict[str, int]] = {
    Mutation: {"none": 0, "ephemeral": 1, "persistent": 2, "unknown": 3},
    Externality: {"none": 0, "same_principal": 1, "third_party": 2, "public": 3, "unknown": 4},
    Reversibility: {"guaranteed": 0, "not_applicable": 0, "compensatable": 1, "manual_recovery": 2,
                    "irreversible": 3, "unknown": 3},
    Authority: {"none": 0, "read": 1, "write_as_user": 2, "privileged": 3, "unknown": 4},
    Subject: {"none": 0, "data": 1, "configuration": 2, "executable": 3, "unknown": 4},
}  # fmt: skip
# Keyed by (axis, value): members of different axes are equal as strings ("none" == "none").
_WEIGHTS: dict[tuple[type[Level], str], int] = {
    (axis, value): w for axis, table in _WEIGHTS_BY_AXIS.items() for value, w in table.items()
}
_TIE_BELOW = {(Reversibility, "not_applicable"), (Reversibility, "irreversible")}
_RANKS: dict[tuple[type[Level], str], int] = {
    key: 2 * w + (0 if key in _TIE_BELOW else 1) for key, w in _WEIGHTS.items()
}

L = TypeVar("L", bound=Level)


def level_of(axis: type[L], value: object, *, what: str) -> L:
    """``value`` as a level of ``axis`` (a member, or its backing string); a clear error otherwise."""
    if isinstance(value, axis):
        return value
    if isinstance(value, str) and not isinstance(value, Level):
        try:
            return axis(value)
        except ValueError:
            pass
    allowed = ", ".join(repr(m.value) for m in axis)
    raise InvalidEffectProfile(f"{value!r} is not a level of {what}; use a {axis.__name__} member or one of {allowed}")

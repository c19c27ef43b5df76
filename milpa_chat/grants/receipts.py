"""``ConditionReceipt`` (one measurement) and the receipts table that says whether a condition holds.

A receipt says which run measured (operation and arguments), on which content (a digest), with which
instrument (the measuring operation's :meth:`~milpa_chat.command.Operation.instrument_digest` at the
time), and whether it held. Receipts are joined to a call by content, never by clock, and "the last
receipt" is the last in the list the host keeps (it appends in order).

=========================================================  =============================================
the latest receipt about this content by that operation    the condition
=========================================================  =============================================
green, from the run the condition describes, today's       holds
instrument
green, from any other run, or from another instrument      not measured by it: the receipt before speaks
red, from any run of that operation, any instrument        does not hold, until measured green again
about another content, or by another operation             says nothing of this condition
=========================================================  =============================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from milpa_chat.command.canonical import Canonical
from milpa_chat.command.ids import OperationId
from milpa_chat.grants.calls import NamedCall
from milpa_chat.grants.errors import InvalidGrant
from milpa_chat.grants.rules import check_one_line, check_operation_name

__all__ = ["ConditionReading", "ConditionReceipt", "Measured", "read_condition"]


@dataclass(frozen=True, slots=True)
class ConditionReceipt:
    """One measurement: ``ConditionReceipt("release:scan", {"strict": True, "archive": "a.tgz"}, content=..., ...)``.

    ``operation`` and ``arguments`` are the run exactly as it ran; ``content`` the digest it measured;
    ``instrument`` the measuring operation's instrument digest then; ``holds`` green (``True``) or red.
    """

    operation: str
    arguments: Mapping[str, Any]
    content: str
    instrument: str
    holds: bool
    at: datetime | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        check_operation_name("operation", self.operation)
        if not isinstance(self.arguments, Mapping) or not all(type(k) is str for k in self.arguments):
            raise InvalidGrant("arguments", f"takes a map of argument names to values, got {self.arguments!r}")
        object.__setattr__(self, "arguments", dict(self.arguments))
        check_one_line("content", self.content)
        check_one_line("instrument", self.instrument)
        if type(self.holds) is not bool:
            raise InvalidGrant("holds", f"takes True (green) or False (red), got {Canonical.shown(self.holds)}")
        if self.at is not None and (not isinstance(self.at, datetime) or self.at.utcoffset() is None):
            raise InvalidGrant("at", f"takes a timezone-aware datetime or None, got {self.at!r}")

    def to_dict(self) -> dict[str, Any]:
        """``{"by": {"operation", "arguments"}, "content", "instrument", "holds", "at"}`` (what a host stores)."""
        return {
            "by": {"operation": self.operation, "arguments": dict(self.arguments)},
            "content": self.content,
            "instrument": self.instrument,
            "holds": self.holds,
            "at": None if self.at is None else self.at.isoformat(),
        }

    @classmethod
    def from_dict(cls, row: object) -> ConditionReceipt | None:
        """The receipt a stored row spells, or ``None`` when it is not one — a fault of the record, not "nothing".

        ``None`` for a ``by`` that names no operation, a digest with anything around it, an unknown
        or missing key, or any other malformation. Keep the ``None`` in the receipts handed to the
        judge (it refuses on it) or say ``record_fault``; never drop it.
        """
        if not isinstance(row, Mapping) or set(row) - {"at"} != {"by", "content", "instrument", "holds"}:
            return None
        by = row["by"]
        if not isinstance(by, Mapping) or set(by) != {"operation", "arguments"} or type(by["operation"]) is not str:
            return None
        try:
            at = row.get("at")
            when = datetime.fromisoformat(at) if isinstance(at, str) else at
            return cls(by["operation"], by["arguments"], row["content"], row["instrument"], row["holds"], at=when)
        except (InvalidGrant, TypeError, ValueError):
            return None


class Measured(StrEnum):
    """What the receipts table says of one condition on one content."""

    HOLDS = "holds"
    NEVER_MEASURED = "never_measured"
    SAYS_NO = "says_no"
    NO_INSTRUMENT = "no_instrument"


@dataclass(frozen=True, slots=True)
class ConditionReading:
    """The table's answer: ``measured``, and the receipt it rests on (the green that holds, or the red)."""

    measured: Measured
    receipt: ConditionReceipt | None = None

    @property
    def holds(self) -> bool:
        return self.measured is Measured.HOLDS


def read_condition(
    by: NamedCall, content: str, receipts: Sequence[ConditionReceipt], instrument: str | None
) -> ConditionReading:
    """Whether the condition measured by ``by`` holds on ``content``, per the receipts table.

    ``instrument`` is the measuring operation's digest as it is today (``None``: the host gave
    none, so no green can count). Receipts are read from the last one back; only those about this
    content by this operation (identity) speak.
    """
    identity = by.id
    for receipt in reversed(receipts):
        if receipt.content != content or OperationId(receipt.operation) != identity:
            continue
        if not receipt.holds:
            return ConditionReading(Measured.SAYS_NO, receipt)
        if instrument is not None and receipt.instrument == instrument and by.matches_exactly(receipt):
            return ConditionReading(Measured.HOLDS, receipt)
    return ConditionReading(Measured.NEVER_MEASURED if instrument is not None else Measured.NO_INSTRUMENT)

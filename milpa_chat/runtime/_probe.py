"""A read-only stand-in for the copy of a record that a rule of :meth:`ApprovalDesk._change` changes.

Most decisions are refused (a tap on a decided card, someone other than the requester) and a rule
refuses before it writes anything. So a rule is first run on a :class:`ReadOnlyView` of the record
as read: a refusal (or "nothing to write") costs no copy of the record. The first write, or any read
that would hand out a nested list or object the rule could change in place, raises
:class:`NeedsCopy`, and the rule is run again, from the start and at the same time, on a deep copy.
Rules are pure functions of the record, the actor and the time, so the second run decides what the
first would have.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NoReturn, cast

__all__ = ["NeedsCopy", "ReadOnlyView", "writes_nothing"]

_SCALARS = (str, int, float, bool, type(None))


class NeedsCopy(BaseException):
    """The rule writes (or reads a nested value): run it on a copy. A ``BaseException`` so that no
    ``except Exception`` of a rule can swallow it."""


def _scalar(value: Any) -> Any:
    if isinstance(value, _SCALARS):
        return value
    raise NeedsCopy


class ReadOnlyView:
    """The record's top-level scalars, read-only; everything else raises :class:`NeedsCopy`."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return _scalar(self._data[key])

    def get(self, key: str, default: Any = None) -> Any:
        return _scalar(self._data[key]) if key in self._data else default

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __getattr__(self, name: str) -> NoReturn:  # update, setdefault, pop, items, ...
        raise NeedsCopy

    def __setitem__(self, key: str, value: Any) -> NoReturn:
        raise NeedsCopy

    def __delitem__(self, key: str) -> NoReturn:
        raise NeedsCopy

    def __iter__(self) -> NoReturn:
        raise NeedsCopy

    def __len__(self) -> NoReturn:
        raise NeedsCopy


def writes_nothing(rule: Callable[[Any, dict[str, Any], float], object], approval: Any, now: float) -> bool:
    """Run ``rule`` on a read-only view of ``approval``'s record: True when it has nothing to write (it returned
    ``None``), False when it must run on a copy; a refusal it raises goes to the caller."""
    try:
        return rule(approval, cast("dict[str, Any]", ReadOnlyView(approval.data)), now) is None
    except NeedsCopy:
        return False

"""The copy of a record that a rule of :meth:`ApprovalDesk._change` changes, copied only as far as it is read.

A rule changes a few top-level fields of a ~1.5 KB record (the state, who decided, the lease...) and
reads or changes in place only some of its nested objects (a card, the failures). So it gets a
:class:`Draft`: a shallow copy of the record as read whose nested objects and arrays are deep-copied the
first time the rule reads them. Whatever a rule does to what it gets, the record as read never changes,
and a refusal (most decisions: a tap on a decided card, someone other than the requester) costs one
shallow copy. The written record shares the nested values the rule never read with the record as read:
records are read-only once built (an :class:`~milpa_chat.runtime.approval.Approval` is never changed in
place), so sharing them is safe.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from milpa_chat.store._values import _copied_dict, _copied_list, copy_value

__all__ = ["Draft"]

_MISSING: Any = object()


_NESTED = (dict, list, tuple)


def _copy(value: Any) -> Any:
    """A deep copy of a nested value, as :func:`~milpa_chat.store.base.copy_value` makes (a tuple becomes a list)."""
    return _copied_dict(value) if value.__class__ is dict else _copied_list(value)


class Draft(dict[str, Any]):
    """A shallow copy of ``base`` whose nested ``dict`` and ``list`` values are deep-copied (and kept) the
    first time they are read through it (a tuple becoming a list): ``d[k]``, ``get``, ``setdefault``, ``pop``,
    ``popitem``, ``items``, ``values``, ``copy``, ``{**d}``, ``dict(d)``, ``d | x``, JSON encoding.
    :meth:`plain` is the plain ``dict`` to write (it shares with ``base`` the nested values never read)."""

    __slots__ = ("_base",)

    def __init__(self, base: Mapping[str, Any]) -> None:
        dict.__init__(self, base)
        self._base = base

    def _own(self, key: str, value: Any) -> Any:
        if value.__class__ in _NESTED and value is self._base.get(key, _MISSING):
            value = _copy(value)
            dict.__setitem__(self, key, value)
        return value

    def _own_all(self) -> None:
        for key, value in list(dict.items(self)):
            self._own(key, value)

    def __getitem__(self, key: str) -> Any:
        return self._own(key, dict.__getitem__(self, key))

    def get(self, key: str, default: Any = None) -> Any:
        value = dict.get(self, key, _MISSING)
        return default if value is _MISSING else self._own(key, value)

    def setdefault(self, key: str, default: Any = None) -> Any:
        value = dict.get(self, key, _MISSING)
        if value is _MISSING:
            dict.__setitem__(self, key, default)
            return default
        return self._own(key, value)

    def pop(self, key: str, *default: Any) -> Any:
        value = dict.get(self, key, _MISSING)
        if value is _MISSING:
            return dict.pop(self, key, *default)
        value = self._own(key, value)
        dict.__delitem__(self, key)
        return value

    def popitem(self) -> tuple[str, Any]:
        key, value = dict.popitem(self)
        if value.__class__ in _NESTED and value is self._base.get(key, _MISSING):
            value = _copy(value)
        return key, value

    def items(self) -> Any:
        self._own_all()
        return dict.items(self)

    def values(self) -> Any:
        self._own_all()
        return dict.values(self)

    def __iter__(self) -> Iterator[str]:
        # defined so that ``{**d}``, ``dict(d)``, ``d | x``, ``x.update(d)`` and ``d.copy()`` read through
        # __getitem__ (CPython copies a dict whose type keeps dict's own __iter__ without calling it)
        return dict.__iter__(self)

    def copy(self) -> dict[str, Any]:
        return {k: self[k] for k in dict.keys(self)}

    def __copy__(self) -> dict[str, Any]:
        return self.copy()

    def __deepcopy__(self, memo: Any) -> dict[str, Any]:
        return copy_value(self)

    def __reduce__(self) -> Any:
        return dict, (self.copy(),)

    def plain(self) -> dict[str, Any]:
        """The draft as a plain ``dict`` (nested values not read are the record's own: never change them)."""
        return dict(dict.items(self))

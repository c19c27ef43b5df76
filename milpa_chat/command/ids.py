"""``OperationId``: an operation's identity apart from its spelling.

Every surface writes an act its own way — ``plugins:disable`` on a terminal, ``plugins_disable`` in
a tool catalogue, ``Plugins.Disable`` in a config file — and they all mean one act. The canonical
form is lowercase and dotted; each surface gets its own spelling back from it.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["OperationId", "names_an_operation", "trim_ascii"]

#: The ASCII whitespace an identity is trimmed of (not every Unicode space, as ``str.strip()``).
ASCII_WHITESPACE: Final = " \t\n\r\0\x0b"
_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*(\.[a-z0-9]+(-[a-z0-9]+)*)*")
_ASCII_UPPER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def trim_ascii(text: str) -> str:
    """``text`` without leading/trailing space, tab, LF, CR, NUL and VT."""
    return text.strip(ASCII_WHITESPACE)


class OperationId:
    """The identity of an operation. ``OperationId("Config:Set")`` is ``config.set``.

    Ids of the same act are equal however they were spelled (``OperationId("a_b") == OperationId("A:B")``);
    :meth:`same_as` also takes a plain spelling.
    """

    __slots__ = ("canonical",)

    canonical: str

    def __init__(self, spelling: str | OperationId) -> None:
        text = spelling.canonical if isinstance(spelling, OperationId) else spelling
        if not isinstance(text, str):
            raise TypeError(f"OperationId takes an operation name (a string), got {type(text).__name__}")
        object.__setattr__(self, "canonical", self.canonize(text))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("OperationId is immutable")

    @staticmethod
    def canonize(name: str) -> str:
        """Trim (ASCII whitespace), ASCII-lowercase, turn every ``:`` and ``_`` into ``.``, strip outer dots.

        The hyphen is not a separator and doubled separators survive: ``a::b`` is ``a..b``. Outer
        dots and outer whitespace are stripped together, so canonizing twice changes nothing
        (``". a"`` is ``"a"``, never ``" a"``).
        """
        text = trim_ascii(name).translate(_ASCII_UPPER).replace(":", ".").replace("_", ".")
        return text.strip(ASCII_WHITESPACE + ".")

    def same_as(self, other: str | OperationId) -> bool:
        """Whether ``other`` (an id or any spelling) names the same act."""
        theirs = other.canonical if isinstance(other, OperationId) else self.canonize(other)
        return self.canonical == theirs

    def for_cli(self) -> str:
        """The terminal's spelling: ``config:set``."""
        return self.canonical.replace(".", ":")

    def for_tool(self) -> str:
        """A tool catalogue's spelling: ``config_set`` (what LLM providers accept)."""
        return self.canonical.replace(".", "_")

    @property
    def is_well_formed(self) -> bool:
        """Whether the canonical form is a name: dotted segments of ``a-z0-9`` joined by single hyphens."""
        return _NAME.fullmatch(self.canonical) is not None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, OperationId):
            return self.canonical == other.canonical
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.canonical)

    def __str__(self) -> str:
        return self.canonical

    def __repr__(self) -> str:
        return f"OperationId({self.canonical!r})"


def names_an_operation(text: str) -> bool:
    """Whether ``text``, in any surface's spelling, is the name of an operation (not prose).

    ``plugins.disable``, ``plugins:disable``, ``RBK-19`` and ``undo`` are names;
    ``delete var/x.json`` and ``dies with the process`` are prose.
    """
    return OperationId(text).is_well_formed

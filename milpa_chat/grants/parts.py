"""The parts of a grant that its reader and the document share: :data:`LONGEST`, :class:`Condition`,
:class:`Falsifier` (a leaf: it imports neither the document nor its reader)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from milpa_chat.command.canonical import Canonical
from milpa_chat.grants.calls import NamedCall
from milpa_chat.grants.errors import InvalidGrant
from milpa_chat.grants.rules import INT64, check_one_line

__all__ = ["LONGEST", "Condition", "Falsifier"]

#: The longest text :meth:`StandingGrant.from_json` reads, in UTF-8 bytes (256 KB): a page a person reads.
LONGEST: Final = 256 * 1024


def _measuring_run(where: str, by: object) -> NamedCall:
    if not isinstance(by, NamedCall):
        raise InvalidGrant(where, f"takes the measuring run as a NamedCall(operation, arguments, free), got {by!r}")
    return by


@dataclass(frozen=True, slots=True)
class Condition:
    """What must have been measured green on the content a call acts on: ``by`` is the run that measures it."""

    name: str
    statement: str
    by: NamedCall

    def __post_init__(self) -> None:
        check_one_line("name", self.name)
        check_one_line("statement", self.statement)
        _measuring_run("by", self.by)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "statement": self.statement, "by": self.by.to_dict()}


@dataclass(frozen=True, slots=True)
class Falsifier:
    """What would show the grant was wrong to give; ``by`` watches it and is seen at least every ``window`` seconds."""

    name: str
    statement: str
    by: NamedCall
    window: int

    def __post_init__(self) -> None:
        check_one_line("name", self.name)
        check_one_line("statement", self.statement)
        _measuring_run("by", self.by)
        if type(self.window) is not int or not 0 < self.window <= INT64[1]:
            raise InvalidGrant(
                "window",
                f"{Canonical.shown(self.window)} is not a window: give how often the watcher must be seen, as a "
                f"positive whole number of seconds (e.g. 86400)",
            )

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "statement": self.statement, "by": self.by.to_dict(), "window": self.window}

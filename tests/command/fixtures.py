"""Declared operations used by the tests: one per declaration rule.

Defined at module level (as a user would), without ``from __future__ import annotations`` on purpose:
the derivation must read real annotations too.
"""

import asyncio
from dataclasses import dataclass
from enum import Enum, auto
from typing import Annotated, Any, Literal

from pydantic import BaseModel

from milpa_chat.command import (
    Because,
    Confirms,
    Externality,
    InvocationContext,
    Mutates,
    Mutation,
    Needs,
    Reads,
    Reversibility,
    Subject,
    Target,
    operation,
)


class Greetings:
    """A collaborator: where greetings are written."""

    def __init__(self) -> None:
        self.written: list[str] = []

    def write(self, name: str) -> str:
        self.written.append(name)
        return "var/greetings.txt"


GREET_DESCRIPTION = "Write a greeting for a person by name into var/greetings.txt (appends one line)."


@operation("hola:greet", GREET_DESCRIPTION)
@Mutates(Mutation.PERSISTENT, Externality.NONE, Reversibility.GUARANTEED, subject=Subject.DATA, rollback="hola:ungreet")
class Greet:
    def __init__(self, name: Annotated[str, Target, Because("who to greet")]) -> None:
        self.name = name

    def run(self, greetings: Greetings) -> dict[str, Any]:
        name = self.name.strip()
        if not name:
            return {"ok": False, "error": "missing `name`"}
        return {"ok": True, "greeted": name, "file": greetings.write(name)}


class Status(Enum):
    DRAFT = "draft"
    PUBLISHED = "published"


@dataclass(frozen=True)
class Receipt:
    id: str
    status: str
    revision: int


@operation("doc:publish", "Move a document to a state.")
@Mutates(Mutation.PERSISTENT)
@Needs(scopes=["docs:write"])
@Confirms
class Publish:
    def __init__(self, id: str, status: Status = Status.DRAFT, revision: int = 1) -> None:
        self.id, self.status, self.revision = id, status, revision

    def run(self) -> Receipt:
        return Receipt(self.id, self.status.value, self.revision)


class Priority(Enum):
    """A "pure" enum: its values mean nothing, its names travel."""

    Low = auto()
    High = auto()


@dataclass(frozen=True)
class Reading:
    ratio: float
    dry: bool
    tags: list[str]
    priority: str


@operation("lab:measure", "Measure a thing.", version="2", path="/measure", surfaces=["cli"])
@Because("so the catalogue explains WHY, not just what.")
@Reads
@dataclass(frozen=True)
class Measure:
    ratio: float
    dry: bool
    tags: list[str]
    priority: Priority = Priority.Low

    def run(self) -> Reading:
        return Reading(self.ratio, self.dry, self.tags, self.priority.name)


class Bare:
    def __init__(self) -> None:
        self.note = "nothing promoted here"
        self._hidden = "private state is not output"


@operation("lab:bare", "Returns a bare object.")
@Reads
class Bares:
    def run(self) -> Bare:
        return Bare()


class Wrapped:
    def __init__(self, value: str) -> None:
        self._value = value


@operation("lab:wrap", "Returns a wrapped object.")
@Reads
class Wraps:
    def run(self) -> Wrapped:
        return Wrapped("x")


@operation("lab:silent", "Says nothing about what it does to the world.")
class Silent:
    def run(self) -> dict[str, Any]:
        return {}


@operation("lab:contradictory", "Claims to change things and to only read.")
@Mutates(Mutation.PERSISTENT)
@Reads
class Contradictory:
    def run(self) -> dict[str, Any]:
        return {}


@operation("lab:two", "Names two targets.")
@Mutates(Mutation.PERSISTENT)
class TwoTargets:
    def __init__(self, first: Annotated[str, Target], second: Annotated[str, Target]) -> None:
        self.first, self.second = first, second

    def run(self) -> dict[str, Any]:
        return {}


@operation("lab:handless", "Has nothing to run.")
@Reads
class Handless:
    def __init__(self, id: str) -> None:
        self.id = id


@operation("lab:untypeable", "Takes a collaborator as input.")
@Reads
class Untypeable:
    def __init__(self, greetings: Greetings) -> None:
        self.greetings = greetings

    def run(self) -> dict[str, Any]:
        return {}


@operation("lab:untyped", "Takes an input of two types.")
@Reads
class Untyped:
    def __init__(self, id: str | int) -> None:
        self.id = id

    def run(self) -> dict[str, Any]:
        return {}


@operation("lab:scalar-run", "Smuggles an input into run().")
@Reads
class ScalarRun:
    def run(self, id: str) -> dict[str, Any]:
        return {"id": id}


@operation("lab:attributed", "Record who approved a note.")
@Mutates(Mutation.PERSISTENT, Externality.NONE, Reversibility.MANUAL_RECOVERY, subject=Subject.DATA)
class Attributed:
    def __init__(self, note: Annotated[str, Because("what is being approved")]) -> None:
        self.note = note

    def run(self, greetings: Greetings, context: InvocationContext | None = None) -> dict[str, Any]:
        return {
            "note": self.note,
            "by": context.actor if context else None,
            "verified": context.verified if context else False,
            "channel": context.channel if context else None,
            "wrote": greetings.write(self.note),
        }


@operation("lab:attributed-strict", "Demands a context nobody may leave out.")
@Reads
class AttributedNonNullable:
    def run(self, context: InvocationContext) -> dict[str, Any]:
        return {}


@operation("lab:whoami", "Says who the surface attributed the call to.")
@Reads
class AttributedAlone:
    def run(self, context: InvocationContext | None = None) -> dict[str, Any]:
        if context is None or not context.is_attributable():
            return {"attributable": False}
        return {"attributable": True, "actor": context.actor}


@operation("lab:choose", "Choose a colour, maybe a size.")
@Reads
class Choose:
    def __init__(
        self, colour: Literal["red", "green"], size: int | None = None, tags: tuple[str, ...] = ("a",)
    ) -> None:
        self.colour, self.size, self.tags = colour, size, tags

    def run(self) -> dict[str, Any]:
        return {"colour": self.colour, "size": self.size, "tags": list(self.tags)}


@operation("lab:slow-echo", "Echo, asynchronously.")
@Reads
class SlowEcho:
    def __init__(self, text: str) -> None:
        self.text = text

    async def run(self) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"echo": self.text}


@operation("lab:model", "A pydantic model as the input contract.")
@Reads
class ModelOp(BaseModel):
    name: Annotated[str, Target, Because("who")]
    count: int = 1

    def run(self) -> dict[str, Any]:
        return {"name": self.name, "count": self.count}

"""``StandingGrant``: the document a person signs once, for named seats and operations, under a ceiling.

It names the seats it lends to (``to``), the operations it covers (``operations``, each a
:class:`NamedCall` whose fixed arguments are matched openly), the widest effect a call may have
(``ceiling``), what must have been measured on the very content the act touches (``conditions``),
what would show the grant was wrong to give (``falsifier``), and how to undo what it lent (``undo``).

A grant built in code is held to exactly the rules its text is read by
(:meth:`StandingGrant.from_json`), so ``StandingGrant.from_json(grant.to_json()) == grant``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from milpa_chat.command.canonical import Canonical
from milpa_chat.command.effects import EffectProfile
from milpa_chat.grants.calls import NamedCall, StandingCall
from milpa_chat.grants.ceiling import ceiling_to_dict, check_ceiling
from milpa_chat.grants.errors import InvalidGrant
from milpa_chat.grants.parts import LONGEST, Condition, Falsifier
from milpa_chat.grants.reader import grant_fields, read_grant_fields
from milpa_chat.grants.rules import check_one_line, parse_expiry, same_value, spell_expiry

__all__ = ["LONGEST", "Condition", "Falsifier", "StandingGrant"]


def _texts(where: str, value: object, *, allow_empty: bool = False) -> tuple[str, ...]:
    if isinstance(value, str | Mapping) or not isinstance(value, Iterable):
        raise InvalidGrant(where, f"takes a list of texts, got {Canonical.shown(value)}")
    items = tuple(value)
    if not items and not allow_empty:
        raise InvalidGrant(where, "is empty: name at least one")
    for i, item in enumerate(items):
        check_one_line(f"{where}[{i}]", item)
        if item in items[:i]:
            raise InvalidGrant(f"{where}[{i}]", f"{Canonical.shown(item)} is listed twice; list it once")
    return items


def _items(where: str, value: object, kind: type, example: str) -> tuple[Any, ...]:
    if isinstance(value, str | Mapping) or not isinstance(value, Iterable):
        raise InvalidGrant(where, f"takes a list of {kind.__name__}, got {Canonical.shown(value)}")
    items = tuple(value)
    for i, item in enumerate(items):
        if not isinstance(item, kind):
            raise InvalidGrant(f"{where}[{i}]", f"takes a {kind.__name__} ({example}), got {item!r}")
    return items


@dataclass(frozen=True, slots=True, kw_only=True)
class StandingGrant:
    """A standing grant. Every field is keyword-only; ``expires_at``, ``supersedes`` and ``lifts`` are optional.

    The lists are kept as tuples. ``expires_at`` takes an aware ``datetime`` to the second (its text
    form, ``"2026-11-01T00:00:00Z"`` or ``"...+01:00"``, is read too) and is kept as the instant in
    UTC. ``supersedes`` lists the ids of the grants this one replaces; ``lifts`` says which
    suspension it lifts (required by the host when a superseded grant was suspended; refused
    without ``supersedes``).
    """

    id: str
    to: Sequence[str]
    operations: Sequence[NamedCall]
    ceiling: EffectProfile
    conditions: Sequence[Condition]
    falsifier: Falsifier
    undo: str
    expires_at: datetime | None = None
    supersedes: Sequence[str] | None = None
    lifts: str | None = None

    LONGEST = LONGEST

    def __post_init__(self) -> None:
        check_one_line("id", self.id)
        object.__setattr__(self, "to", _texts("to", self.to))
        self._check_operations()
        check_ceiling("ceiling", self.ceiling)
        self._check_conditions()
        if not isinstance(self.falsifier, Falsifier):
            raise InvalidGrant(
                "falsifier",
                "a grant names what would show it was wrong to give, and the operation that watches it: "
                "pass Falsifier(name, statement, by=NamedCall(...), window=seconds)",
            )
        check_one_line("undo", self.undo)
        if self.expires_at is not None:
            object.__setattr__(self, "expires_at", parse_expiry("expires_at", self.expires_at))
        self._check_supersedes()

    def _check_operations(self) -> None:
        entries = _items(
            "operations", self.operations, NamedCall, 'NamedCall("release:publish", {"channel": "stable"})'
        )
        if not entries:
            raise InvalidGrant("operations", "is empty: a grant covers at least one operation")
        for i, entry in enumerate(entries):
            if entry.free:
                raise InvalidGrant(
                    f"operations[{i}].free", "a covering entry is matched openly and lists no free names; drop them"
                )
            if entry.id.canonical.split(".")[0] == "standing":
                raise InvalidGrant(
                    f"operations[{i}].operation",
                    f"{Canonical.shown(entry.operation)} is a standing.* operation: a grant may not lend the power "
                    f"to manage grants",
                )
            for earlier in entries[:i]:
                if earlier.id == entry.id and same_value(dict(earlier.arguments), dict(entry.arguments)):
                    raise InvalidGrant(
                        f"operations[{i}]", "covers the same operation with the same fixed arguments twice"
                    )
        object.__setattr__(self, "operations", entries)

    def _check_conditions(self) -> None:
        conditions = _items("conditions", self.conditions, Condition, "Condition(name, statement, by=NamedCall(...))")
        if not conditions:
            raise InvalidGrant(
                "conditions", "is empty: a grant says what must have been measured on the content a call acts on"
            )
        names = [c.name for c in conditions]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise InvalidGrant(f"conditions[{i}].name", f"{Canonical.shown(name)} names two conditions; rename one")
        object.__setattr__(self, "conditions", conditions)

    def _check_supersedes(self) -> None:
        if self.supersedes is not None:
            object.__setattr__(self, "supersedes", _texts("supersedes", self.supersedes))
        if self.lifts is not None:
            check_one_line("lifts", self.lifts)
            if self.supersedes is None:
                raise InvalidGrant("lifts", "lifts a suspension only beside supersedes: name the grant it supersedes")

    # ------------------------------------------------------------------------- queries
    def lends_to(self, seat: str) -> bool:
        """Whether ``seat`` is one this grant lends to (byte for byte)."""
        return seat in self.to

    def covers(self, operation: str) -> bool:
        """Whether some entry covers ``operation`` (identity, whatever its fixed arguments)."""
        return any(entry.names_operation(operation) for entry in self.operations)

    def names(self, call: StandingCall) -> bool:
        """Whether the grant names the call as it is spelled: the seat, and an entry that matches openly."""
        return self.lends_to(call.seat) and any(entry.matches(call) for entry in self.operations)

    def expired(self, now: datetime) -> bool:
        """Past its own date: ``now >= expires_at``."""
        return self.expires_at is not None and now >= self.expires_at

    # ---------------------------------------------------------------------- spelling
    def to_dict(self) -> dict[str, Any]:
        """The document as a map; every key is stated (``expires_at``, ``supersedes``, ``lifts`` as ``None``)."""
        return {
            "id": self.id,
            "to": list(self.to),
            "operations": [entry.to_dict(with_free=False) for entry in self.operations],
            "ceiling": ceiling_to_dict(self.ceiling),
            "conditions": [condition.to_dict() for condition in self.conditions],
            "falsifier": self.falsifier.to_dict(),
            "undo": self.undo,
            "expires_at": None if self.expires_at is None else spell_expiry(self.expires_at),
            "supersedes": None if self.supersedes is None else list(self.supersedes),
            "lifts": self.lifts,
        }

    def to_json(self) -> str:
        """:meth:`Canonical.json` of :meth:`to_dict`: the one spelling (what a person is shown and signs)."""
        return Canonical.json(self.to_dict())

    def digest(self) -> str:
        """``sha256:<hex>`` of the canonical spelling."""
        return Canonical.digest(self.to_dict())

    @classmethod
    def from_json(cls, text: str | bytes) -> StandingGrant:
        """Read the signed text strictly (see :func:`milpa_chat.grants.reader.read_grant_fields`)."""
        grant = cls(**read_grant_fields(text))
        if len(grant.to_json().encode("utf-8")) > LONGEST:
            raise InvalidGrant(
                "$",
                f"its canonical spelling (which states supersedes, lifts and expires_at) is longer than {LONGEST} "
                f"bytes: shorten a statement or the lists",
            )
        return grant

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StandingGrant:
        """Read a decoded document: every rule that can be seen in a map (not repeated keys, nor escapes)."""
        return cls(**grant_fields(data))


def entries_over(grant: StandingGrant, operation: str) -> Sequence[NamedCall]:
    """The grant's entries over ``operation`` (identity)."""
    return [entry for entry in grant.operations if entry.names_operation(operation)]

"""``GrantStanding``: the facts a host gathered about one grant — and nothing in it says "yes" by default.

``state`` has to be said. The signature is faulted until the host says it verified it
(``signature_fault=None``), and so is the record until it says every line it keeps of the grant was
read (``record_fault=None``). A host that forgets any of the three lends nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Final

from milpa_chat.command.canonical import Canonical
from milpa_chat.command.ids import OperationId
from milpa_chat.grants.errors import InvalidGrant
from milpa_chat.grants.receipts import ConditionReceipt
from milpa_chat.grants.rules import check_operation_name

__all__ = ["NOT_READ", "NOT_VERIFIED", "GrantStanding", "GrantState"]

#: The fault a standing carries until the host says it verified the signature.
NOT_VERIFIED: Final = "the host did not say it verified the signature"
#: The fault a standing carries until the host says it read every line it keeps of the grant.
NOT_READ: Final = "the host did not say it read every line it keeps of this grant"


class GrantState(StrEnum):
    """Where a grant stands. Expiry is not a state: it is read from ``expires_at`` and the call's ``now``."""

    IN_FORCE = "in_force"
    SUSPENDED = "suspended"
    SUPERSEDED = "superseded"
    REVOKED = "revoked"


def _fault(where: str, value: object) -> None:
    if value is not None and type(value) is not str:
        raise InvalidGrant(where, f"is None (it holds) or the host's reason why not (a text), got {value!r}")


@dataclass(frozen=True, slots=True)
class GrantStanding:
    """``GrantStanding(GrantState.IN_FORCE, signature_fault=None, record_fault=None, receipts=[...], ...)``.

    ``receipts`` is every receipt the host keeps that may speak for the grant's conditions, in the
    order it appended them — including the ``None`` of a row :meth:`ConditionReceipt.from_dict`
    could not read (that is a fault of the record, and the judge refuses on it).
    ``stopped_because`` is the host's sentence why the grant is stopped (a suspension's reason).
    ``falsifier_seen_at`` is the last sign of life of the falsifier's watcher (``None``: none).
    ``instruments`` maps each measuring operation (any spelling) to its instrument digest today.
    """

    state: GrantState
    signature_fault: str | None = NOT_VERIFIED
    record_fault: str | None = NOT_READ
    receipts: Sequence[ConditionReceipt | object] = ()
    stopped_because: str | None = None
    falsifier_seen_at: datetime | None = None
    instruments: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        states = ", ".join(s.value for s in GrantState)
        if isinstance(self.state, str) and not isinstance(self.state, GrantState):
            if self.state not in {s.value for s in GrantState}:
                raise InvalidGrant("state", f"{Canonical.shown(self.state)} is not a state; say one of {states}")
            object.__setattr__(self, "state", GrantState(self.state))
        if not isinstance(self.state, GrantState):
            raise InvalidGrant("state", f"takes a GrantState ({states}); where a grant stands has to be said")
        _fault("signature_fault", self.signature_fault)
        _fault("record_fault", self.record_fault)
        _fault("stopped_because", self.stopped_because)
        if isinstance(self.receipts, str | bytes) or not isinstance(self.receipts, Sequence):
            raise InvalidGrant("receipts", "takes the list of receipts the host keeps, in the order it kept them")
        object.__setattr__(self, "receipts", tuple(self.receipts))
        seen = self.falsifier_seen_at
        if seen is not None and (not isinstance(seen, datetime) or seen.utcoffset() is None):
            raise InvalidGrant("falsifier_seen_at", f"takes a timezone-aware datetime or None, got {seen!r}")
        instruments: dict[str, str] = {}
        for name, digest in dict(self.instruments).items():
            check_operation_name("instruments", name)
            if type(digest) is not str:
                raise InvalidGrant(f"instruments.{name}", f"takes an instrument digest (text), got {digest!r}")
            instruments[OperationId(name).canonical] = digest
        object.__setattr__(self, "instruments", instruments)

    @property
    def unread(self) -> int | None:
        """The position of the first thing in ``receipts`` that is not a receipt, or ``None``."""
        return next((i for i, r in enumerate(self.receipts) if not isinstance(r, ConditionReceipt)), None)

    @property
    def reads_whole(self) -> bool:
        """Whether the host read every line it keeps of the grant: no ``record_fault``, no non-receipt."""
        return self.record_fault is None and self.unread is None

    @property
    def stopped(self) -> bool:
        """Suspended, or its record does not read whole (whatever its state: the unreadable line may be the stop)."""
        return self.state is GrantState.SUSPENDED or not self.reads_whole

    def instrument(self, operation: str) -> str | None:
        """Today's instrument digest of ``operation`` (identity), or ``None`` when the host gave none."""
        return self.instruments.get(OperationId(operation).canonical)

    def valid_receipts(self) -> list[ConditionReceipt]:
        return [r for r in self.receipts if isinstance(r, ConditionReceipt)]

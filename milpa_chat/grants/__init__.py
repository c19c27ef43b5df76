"""Standing grants: a person signs once, for named seats and operations, under a ceiling of effect.

The documents and their judge are pure (no I/O, no clock: ``now`` comes with the call):

* :class:`StandingGrant` — the signed document (:meth:`~StandingGrant.from_json` reads its text
  strictly; :meth:`~StandingGrant.to_json` is its one spelling; :meth:`~StandingGrant.digest`).
* :class:`NamedCall`, :class:`Condition`, :class:`Falsifier` — its parts.
* :class:`Canonical` — canonical JSON and digest, ``one_line``, ``shown``, ``said``, ``short`` (it lives in
  :mod:`milpa_chat.command.canonical`, since operations use it too).
* :class:`ConditionReceipt` — one measurement; :class:`GrantStanding` — the host's facts about one
  grant, faulted by default; :class:`StandingCall` — the call, as facts.
* :class:`StandingJudge` — ``judge`` (seven checks, first failure decides), ``among`` (shrinking
  wins), ``may_be_naming``; answers are :class:`StandingVerdict` filed under a :class:`StandingCheck`.

The host around them: kept in the store, judged before an approval, changed only by people:

* :class:`GrantDesk` (``registry.grants``) — grants, receipts and signs of life in the store (every
  backend, through the store protocol); the pipeline's ``standing`` step asks it before an approval
  is opened; :class:`GrantOffer` says what "Always allow…" drafts for an operation. Its changes (draft,
  sign, revoke, lapse) are :class:`~milpa_chat.grants.changes.GrantChanges`.
* :class:`GrantRecord` — a stored grant, read-only.
* :class:`GrantChat` — "Always allow…", ``/grants`` and the grant cards in chat (loaded only when asked
  for: it brings the chat package). The notebook's and the command line's views are
  :mod:`milpa_chat.jupyter.grants` and :mod:`milpa_chat.cli.grants`.

Old addresses still answer with the same objects: :mod:`milpa_chat.command.grants` (the documents and
the judge) and :mod:`milpa_chat.standing` (the host).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from milpa_chat.command.canonical import Canonical
from milpa_chat.grants.calls import NamedCall, Run, StandingCall
from milpa_chat.grants.desk import GrantDesk, GrantOffer, Judged
from milpa_chat.grants.document import LONGEST, Condition, Falsifier, StandingGrant
from milpa_chat.grants.errors import InvalidGrant
from milpa_chat.grants.judge import StandingCheck, StandingJudge, StandingVerdict
from milpa_chat.grants.receipts import ConditionReading, ConditionReceipt, Measured, read_condition
from milpa_chat.grants.records import GrantRecord
from milpa_chat.grants.rules import is_operation_name
from milpa_chat.grants.standing import NOT_READ, NOT_VERIFIED, GrantStanding, GrantState

if TYPE_CHECKING:
    from milpa_chat.grants.chat import GrantChat

__all__ = [
    "LONGEST",
    "NOT_READ",
    "NOT_VERIFIED",
    "Canonical",
    "Condition",
    "ConditionReading",
    "ConditionReceipt",
    "Falsifier",
    "GrantChat",
    "GrantDesk",
    "GrantOffer",
    "GrantRecord",
    "GrantStanding",
    "GrantState",
    "InvalidGrant",
    "Judged",
    "Measured",
    "NamedCall",
    "Run",
    "StandingCall",
    "StandingCheck",
    "StandingGrant",
    "StandingJudge",
    "StandingVerdict",
    "is_operation_name",
    "read_condition",
]


def __getattr__(name: str) -> object:
    if name == "GrantChat":  # the chat side loads the chat package: only when asked for
        from milpa_chat.grants.chat import GrantChat

        return GrantChat
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

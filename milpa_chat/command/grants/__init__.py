"""Standing grants: a person signs once, for named seats and operations, under a ceiling of effect.

* :class:`StandingGrant` — the signed document (:meth:`~StandingGrant.from_json` reads its text
  strictly; :meth:`~StandingGrant.to_json` is its one spelling; :meth:`~StandingGrant.digest`).
* :class:`NamedCall`, :class:`Condition`, :class:`Falsifier` — its parts.
* :class:`Canonical` — canonical JSON and digest, ``one_line``, ``shown``, ``said``, ``short``.
* :class:`ConditionReceipt` — one measurement; :class:`GrantStanding` — the host's facts about one
  grant, faulted by default; :class:`StandingCall` — the call, as facts.
* :class:`StandingJudge` — ``judge`` (seven checks, first failure decides), ``among`` (shrinking
  wins), ``may_be_naming``; answers are :class:`StandingVerdict` filed under a :class:`StandingCheck`.

Everything here is pure: no I/O, no clock (``now`` comes with the call).
"""

from __future__ import annotations

from milpa_chat.command.grants.calls import NamedCall, Run, StandingCall
from milpa_chat.command.grants.canonical import Canonical
from milpa_chat.command.grants.document import LONGEST, Condition, Falsifier, StandingGrant
from milpa_chat.command.grants.errors import InvalidGrant
from milpa_chat.command.grants.judge import StandingCheck, StandingJudge, StandingVerdict
from milpa_chat.command.grants.receipts import ConditionReading, ConditionReceipt, Measured, read_condition
from milpa_chat.command.grants.rules import is_operation_name
from milpa_chat.command.grants.standing import NOT_READ, NOT_VERIFIED, GrantStanding, GrantState

__all__ = [
    "LONGEST",
    "NOT_READ",
    "NOT_VERIFIED",
    "Canonical",
    "Condition",
    "ConditionReading",
    "ConditionReceipt",
    "Falsifier",
    "GrantStanding",
    "GrantState",
    "InvalidGrant",
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

"""The old address of standing grants' documents and judge, now :mod:`milpa_chat.grants`.

Kept so that imports written before the move still work: this package and each of its old modules
(``milpa_chat.command.grants.judge``, ``….canonical``, …) name the very same objects as the new home.
"""

from __future__ import annotations

import sys

import milpa_chat.command._unicode16 as _unicode16
import milpa_chat.command.canonical as canonical
from milpa_chat.grants import (
    LONGEST,
    NOT_READ,
    NOT_VERIFIED,
    Canonical,
    Condition,
    ConditionReading,
    ConditionReceipt,
    Falsifier,
    GrantStanding,
    GrantState,
    InvalidGrant,
    Measured,
    NamedCall,
    Run,
    StandingCall,
    StandingCheck,
    StandingGrant,
    StandingJudge,
    StandingVerdict,
    calls,
    ceiling,
    document,
    errors,
    is_operation_name,
    judge,
    parts,
    read_condition,
    reader,
    receipts,
    rules,
    standing,
)

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

for _old in (_unicode16, canonical, calls, ceiling, document, errors, judge, parts, reader, receipts, rules, standing):
    sys.modules[f"{__name__}.{_old.__name__.rsplit('.', 1)[1]}"] = _old

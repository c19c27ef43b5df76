"""A valid grant, its text, and the facts a host would gather, for the standing-grant tests to vary."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from milpa_chat.command import EffectProfile
from milpa_chat.command.grants import (
    ConditionReceipt,
    GrantStanding,
    GrantState,
    StandingCall,
    StandingGrant,
)
from milpa_chat.command.levels import Authority, Externality, Mutation, Reversibility, Subject

NOW = datetime(2026, 10, 20, 12, 0, 0, tzinfo=UTC)
CONTENT = "sha256:" + "ab" * 32
OTHER_CONTENT = "sha256:" + "cd" * 32
SCANNER = "sha256:" + "11" * 32
WATCHER = "sha256:" + "22" * 32

#: The grant every test starts from (as a person would write it).
DOCUMENT: dict[str, Any] = {
    "id": "release-stable-1",
    "to": ["ci-bot"],
    "operations": [{"operation": "release:publish", "arguments": {"channel": "stable"}}],
    "ceiling": {
        "mutation": "persistent",
        "externality": "public",
        "reversibility": "compensatable",
        "authority": "write_as_user",
        "subject": "data",
        "rollback_contract": "release:unpublish",
        "escalates_on": [],
    },
    "conditions": [
        {
            "name": "no-host-names",
            "statement": "what is published names no machine",
            "by": {"operation": "release:scan", "arguments": {"strict": True}, "free": ["archive"]},
        }
    ],
    "falsifier": {
        "name": "no-leak-report",
        "statement": "nobody reports a machine name in a release",
        "by": {"operation": "reports:watch", "arguments": {}, "free": []},
        "window": 86400,
    },
    "undo": "unpublish the release with release:unpublish",
}

#: The effect a publish call carries (within the ceiling).
PUBLISH = EffectProfile(
    Mutation.PERSISTENT, Externality.PUBLIC, Reversibility.COMPENSATABLE, Authority.WRITE_AS_USER, subject=Subject.DATA
)


def document(**changes: Any) -> dict[str, Any]:
    """A deep copy of :data:`DOCUMENT` with top-level keys replaced (``None`` values are kept)."""
    data = copy.deepcopy(DOCUMENT)
    data.update(changes)
    return data


def text(data: dict[str, Any] | None = None) -> str:
    return json.dumps(DOCUMENT if data is None else data)


def grant(**changes: Any) -> StandingGrant:
    return StandingGrant.from_dict(document(**changes))


#: The run the condition describes, on one candidate.
SCAN = {"strict": True, "archive": "a.tgz"}


def green(
    content: str = CONTENT, *, instrument: str = SCANNER, arguments: dict[str, Any] | None = None
) -> ConditionReceipt:
    """A green receipt of ``release:scan`` (by default the described run, today's instrument)."""
    return ConditionReceipt("release:scan", SCAN if arguments is None else arguments, content, instrument, True)


def red(content: str = CONTENT, *, arguments: dict[str, Any] | None = None) -> ConditionReceipt:
    """A red receipt of ``release:scan``."""
    return ConditionReceipt("release:scan", SCAN if arguments is None else arguments, content, SCANNER, False)


def standing(state: GrantState = GrantState.IN_FORCE, **changes: Any) -> GrantStanding:
    """Every fact holds: verified, read, watched an hour ago, one green on :data:`CONTENT`."""
    facts: dict[str, Any] = {
        "signature_fault": None,
        "record_fault": None,
        "receipts": [green()],
        "falsifier_seen_at": NOW - timedelta(hours=1),
        "instruments": {"release:scan": SCANNER, "reports:watch": WATCHER},
    }
    facts.update(changes)
    return GrantStanding(state, **facts)


def call(arguments: dict[str, Any] | None = None, **changes: Any) -> StandingCall:
    facts: dict[str, Any] = {
        "operation": "release:publish",
        "arguments": {"channel": "stable", "archive": "a.tgz"} if arguments is None else arguments,
        "seat": "ci-bot",
        "content": CONTENT,
        "effect": PUBLISH,
        "now": NOW,
    }
    facts.update(changes)
    return StandingCall(**facts)

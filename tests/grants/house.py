"""A small release house for the standing-grant tests: publish (needs an approver), scan, watch.

Archives are texts kept in :data:`ARCHIVES`; an operation says what a call acts on as the SHA-256 of
the archive it names, so a measurement on one archive says nothing of another.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from milpa_chat.command import EffectProfile, Operation, RegistryProjector
from milpa_chat.command.grants import Condition, Falsifier, NamedCall, StandingGrant
from milpa_chat.command.levels import Authority, Externality, Mutation, Reversibility, Subject
from milpa_chat.grants.desk import GrantDesk, GrantOffer
from milpa_chat.runtime import ToolContext, ToolRegistry, VerifyPolicy
from milpa_chat.store.base import Store

ARCHIVES: dict[str, str] = {
    "clean.tgz": "release 1.0: the code and nothing else",
    "other.tgz": "release 1.1: the code, and a new page",
    "leaky.tgz": "release 1.2: built on host build-07.internal",
}
PUBLISH = EffectProfile(
    Mutation.PERSISTENT, Externality.PUBLIC, Reversibility.COMPENSATABLE, Authority.WRITE_AS_USER, subject=Subject.DATA
)
WIDE = EffectProfile(
    Mutation.PERSISTENT, Externality.PUBLIC, Reversibility.COMPENSATABLE, Authority.WRITE_AS_USER, subject=Subject.DATA
)
PUBLISHED: list[tuple[str, str]] = []


def content(arguments: Mapping[str, Any]) -> str | None:
    text = ARCHIVES.get(str(arguments.get("archive")))
    return None if text is None else "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def publish(arguments: Mapping[str, Any]) -> str:
    PUBLISHED.append((str(arguments["archive"]), str(arguments["channel"])))
    return f"published {arguments['archive']} to {arguments['channel']}"


def scan(arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {"holds": "host" not in ARCHIVES.get(str(arguments["archive"]), "host")}


def watch(arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {"reports": 0}


ARCHIVE = {"type": "string", "description": "archive name"}
PUBLISH_OP = Operation(
    "release:publish",
    "Publish a release archive to a channel",
    publish,
    mutating=True,
    effects=PUBLISH,
    acts_on=content,
    input_schema={
        "type": "object",
        "properties": {"archive": ARCHIVE, "channel": {"type": "string", "enum": ["stable", "beta"]}},
        "required": ["archive", "channel"],
    },
)
SCAN_OP = Operation(
    "release:scan",
    "Scan a release archive for machine names",
    scan,
    effects=EffectProfile.read_only(),
    acts_on=content,
    input_schema={
        "type": "object",
        "properties": {"archive": ARCHIVE, "strict": {"type": "boolean"}},
        "required": ["archive", "strict"],
    },
)
WATCH_OP = Operation("reports:watch", "Read the leak reports", watch, effects=EffectProfile.read_only())
SCANNED = Condition(
    "no-host-names",
    "what is published names no machine",
    NamedCall("release:scan", {"strict": True}, free=("archive",)),
)
WATCHED = Falsifier("no-leak-report", "nobody reports a machine name in a release", NamedCall("reports:watch"), 86400)
OFFER = GrantOffer((SCANNED,), WATCHED, "unpublish the release with release:unpublish", fixed=("channel",))

REQUESTER = ToolContext("telegram:100", "telegram", ("release:publish",), extra={"user_name": "Rita"})
APPROVER = ToolContext("slack:U200", "slack", ("release:approve", "grants:sign"), extra={"user_name": "Abel"})
SIGNER = ToolContext("telegram:300", "telegram", ("grants:sign",), extra={"user_name": "Sara"})
NOBODY = ToolContext("slack:U999", "slack", ("release:publish",), extra={"user_name": "Nico"})


def house(store: Store | None = None, **options: Any) -> tuple[ToolRegistry, GrantDesk]:
    """A registry on ``store`` with the three operations, publish under an approver, and its grants
    (``options`` for the :class:`GrantDesk`)."""
    registry = ToolRegistry(store=store)
    RegistryProjector(
        registry, verify={"release:publish": VerifyPolicy(approver_scopes=("release:approve",))}
    ).register(PUBLISH_OP, SCAN_OP, WATCH_OP)
    desk = GrantDesk(registry, **options).know(SCAN_OP, WATCH_OP).know(PUBLISH_OP, offer=OFFER)
    return registry, desk


def grant(**changes: Any) -> StandingGrant:
    """A grant for Rita's seat: publish to stable, scanned strictly, watched."""
    parts: dict[str, Any] = {
        "id": "release-stable",
        "to": (REQUESTER.principal,),
        "operations": (NamedCall("release:publish", {"channel": "stable"}),),
        "ceiling": PUBLISH,
        "conditions": (SCANNED,),
        "falsifier": WATCHED,
        "undo": "unpublish the release with release:unpublish",
    }
    parts.update(changes)
    return StandingGrant(**parts)


async def measured(registry: ToolRegistry, *archives: str) -> None:
    """Scan ``archives`` strictly and read the reports once, as the requester (receipts and a sign of life)."""
    for archive in archives:
        scanned = await registry.call("release_scan", {"archive": archive, "strict": True}, REQUESTER)
        assert scanned.success, scanned.error
    watched = await registry.call("reports_watch", {}, REQUESTER)
    assert watched.success, watched.error


async def signed(desk: GrantDesk, document: StandingGrant | None = None) -> str:
    """Draft ``document`` as the approver and sign it as another person; the grant's id."""
    record, approval = await desk.draft(document or grant(), APPROVER, via="slack")
    done, _ = await desk.decide(approval.id, "approve", SIGNER, via="telegram")
    assert done is not None and done.state == "in_force", done
    return record.id

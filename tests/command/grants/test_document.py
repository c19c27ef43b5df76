"""StandingGrant: what a document holds, what cannot be written at all, and reading back its own spelling."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from milpa_chat.command import EffectProfile
from milpa_chat.command.composition import Descent
from milpa_chat.command.grants import (
    Canonical,
    Condition,
    Falsifier,
    InvalidGrant,
    NamedCall,
    StandingGrant,
    StandingJudge,
)
from milpa_chat.command.levels import Authority, Externality, Mutation, Reversibility, Subject
from tests.command.grants import builders as b
from tests.command.grants.rules import covers, rule

Change = Callable[[dict[str, Any]], object]


def ceiling(**axes: Any) -> Change:
    return lambda d: d["ceiling"].update(axes)


def refuses(change: Change, field: str) -> Any:
    return (change, field)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        rule("SG-002", lambda d: d.update(to=[]), "to", note="no seat"),
        rule("SG-002", lambda d: d.update(to=["a", "a"]), "to[1]", note="a seat twice"),
        rule("SG-002", lambda d: d.update(to=["ci bot\n"]), "to[0]", note="a seat that is not one line"),
        rule("SG-004", lambda d: d.update(operations=[]), "operations", note="no operation"),
        rule(
            "SG-004",
            lambda d: d["operations"].append({"operation": "Release.Publish", "arguments": {"channel": "stable"}}),
            "operations[1]",
            note="same identity, same fixed arguments",
        ),
        rule(
            "SG-006",
            lambda d: d["operations"].append({"operation": "standing:lift", "arguments": {}}),
            "operations[1].operation",
            note="standing:lift",
        ),
        rule(
            "SG-006",
            lambda d: d["operations"].append({"operation": "Standing_Suspend", "arguments": {}}),
            "operations[1].operation",
            note="Standing_Suspend",
        ),
        rule(
            "SG-006",
            lambda d: d["operations"].append({"operation": "standing", "arguments": {}}),
            "operations[1].operation",
            note="the bare name",
        ),
        rule("SG-007", ceiling(mutation="unknown"), "ceiling", note="mutation unknown"),
        rule("SG-007", ceiling(subject="unknown"), "ceiling.subject", note="subject unknown"),
        rule("SG-008", ceiling(reversibility="manual_recovery"), "ceiling.reversibility", note="manual_recovery"),
        rule("SG-008", ceiling(reversibility="irreversible"), "ceiling.reversibility", note="irreversible"),
        rule("SG-009", ceiling(authority="privileged"), "ceiling.authority", note="privileged"),
        rule(
            "SG-010",
            ceiling(mutation="none", subject="data", reversibility="not_applicable"),
            "ceiling",
            note="a read with a subject",
        ),
        rule(
            "SG-010",
            ceiling(mutation="none", subject="none", reversibility="guaranteed"),
            "ceiling",
            note="a read promising undo",
        ),
        rule("SG-010", ceiling(reversibility="not_applicable"), "ceiling", note="a change with nothing to undo"),
        rule(
            "SG-010",
            ceiling(reversibility="guaranteed", rollback_contract=None),
            "ceiling",
            note="guaranteed without contract",
        ),
        rule(
            "SG-011",
            ceiling(rollback_contract="delete the file"),
            "ceiling.rollback_contract",
            note="a sentence as the inverse",
        ),
        rule(
            "SG-011",
            ceiling(rollback_contract=" release:unpublish"),
            "ceiling.rollback_contract",
            note="an inverse with a space around",
        ),
        rule("SG-013", lambda d: d.update(conditions=[]), "conditions", note="no condition"),
        rule("SG-013", lambda d: d.pop("conditions"), "conditions", note="conditions missing"),
        rule(
            "SG-014",
            lambda d: d["conditions"].append(dict(d["conditions"][0])),
            "conditions[1].name",
            note="two conditions of one name",
        ),
        rule(
            "SG-014",
            lambda d: d["conditions"][0].update(statement="two\nlines"),
            "conditions[0].statement",
            note="a statement on two lines",
        ),
        rule("SG-014", lambda d: d["conditions"][0]["by"].pop("free"), "conditions[0].by.free", note="by without free"),
        rule("SG-015", lambda d: d.pop("falsifier"), "falsifier", note="no falsifier"),
        rule("SG-015", lambda d: d["falsifier"].pop("by"), "falsifier.by", note="a falsifier nothing watches"),
        rule("SG-015", lambda d: d["falsifier"].pop("window"), "falsifier.window", note="no window"),
        rule("SG-016", lambda d: d["falsifier"].update(window=0), "falsifier.window", note="a window of 0"),
        rule("SG-016", lambda d: d["falsifier"].update(window=True), "falsifier.window", note="true as window"),
        rule("SG-016", lambda d: d["falsifier"].update(name=" x"), "falsifier.name", note="a name with a space"),
        rule("SG-017", lambda d: d.update(expires_at="2026-11-01"), "expires_at", note="a date only"),
        rule("SG-018", lambda d: d.update(lifts="the suspension of 2026-10-01"), "lifts", note="lifts alone"),
        rule("SG-018", lambda d: d.update(supersedes=[]), "supersedes", note="an empty supersedes"),
        rule("SG-019", lambda d: d.pop("undo"), "undo", note="undo missing"),
        rule("SG-019", lambda d: d.update(undo=""), "undo", note="undo empty"),
        rule("SG-020", lambda d: d.update(note="x"), "note", note="a top-level key it does not read"),
        rule(
            "SG-020",
            lambda d: d["conditions"][0]["by"].update(timeout=5),
            "conditions[0].by.timeout",
            note="a key in by",
        ),
        rule(
            "SG-020",
            lambda d: d["ceiling"].update(fully_classified=True),
            "ceiling.fully_classified",
            note="a key in the ceiling",
        ),
        rule(
            "SG-020",
            lambda d: d["operations"][0].update(free=["archive"]),
            "operations[0].free",
            note="a key in an entry",
        ),
        rule("SG-020", lambda d: d["falsifier"].update(every="day"), "falsifier.every", note="a key in falsifier"),
        rule(
            "SG-020",
            lambda d: d["conditions"][0].update(owner="me"),
            "conditions[0].owner",
            note="a key in a condition",
        ),
        rule("SG-044", lambda d: d.update(to={"0": "ci-bot"}), "to", note="a list written as an object"),
        rule(
            "SG-044",
            lambda d: d["operations"][0].update(arguments=[]),
            "operations[0].arguments",
            note="a map written as a list",
        ),
        rule("SG-049", lambda d: d.update(id="release-1 "), "id", note="an id with a space after it"),
        rule("SG-049", lambda d: d.update(undo="revert it\n"), "undo", note="undo with a line break"),
        rule(
            "SG-049",
            lambda d: d["operations"][0].update(operation="release:publish\x00"),
            "operations[0].operation",
            note="NUL after a name",
        ),
        rule(
            "SG-050",
            lambda d: d["operations"][0].update(operation=":release:publish:"),
            "operations[0].operation",
            note="separators at both ends",
        ),
        rule(
            "SG-050",
            lambda d: d["operations"][0].update(operation="release.publish."),
            "operations[0].operation",
            note="a dot at the end",
        ),
        rule(
            "SG-050",
            lambda d: d["operations"][0].update(operation="_release_publish"),
            "operations[0].operation",
            note="an underscore first",
        ),
        rule(
            "SG-051",
            lambda d: d["operations"][0].update(operation="release::publish"),
            "operations[0].operation",
            note="two separators",
        ),
        rule(
            "SG-051",
            lambda d: d["operations"][0].update(operation="release publish"),
            "operations[0].operation",
            note="a space inside",
        ),
        rule(
            "SG-051",
            lambda d: d["operations"][0].update(operation="release/publish"),
            "operations[0].operation",
            note="a slash",
        ),
        rule("SG-052", ceiling(mutation="Persistent"), "ceiling.mutation", note="an axis in capitals"),
        rule("SG-052", ceiling(mutation=7), "ceiling.mutation", note="an axis as a number"),
        rule("SG-052", ceiling(escalates_on=[1]), "ceiling.escalates_on", note="a non-text escalator"),
        rule("SG-052", ceiling(rollback_contract=5), "ceiling.rollback_contract", note="a non-text inverse"),
        rule(
            "SG-052",
            ceiling(mutation="none", subject="none", reversibility="guaranteed", rollback_contract=None),
            "ceiling",
            note="none+guaranteed not normalised",
        ),
        rule(
            "SG-052",
            ceiling(reversibility="guaranteed", rollback_contract="undo it by hand"),
            "ceiling",
            note="guaranteed with prose not demoted",
        ),
        rule(
            "SG-054",
            lambda d: d.update(supersedes=["old\u200b"]),
            "supersedes[0]",
            note="a superseded id with a zero-width space",
        ),
        rule("SG-054", lambda d: d.update(lifts="\u202eevil"), "lifts", note="lifts with a direction override"),
        rule(
            "SG-054",
            lambda d: d["conditions"][0].update(name="no\u00a0host"),
            "conditions[0].name",
            note="a condition name with a no-break space",
        ),
    ],
)
def test_a_document_that_cannot_be_written(change: Change, field: str) -> None:
    data = b.document()
    change(data)
    with pytest.raises(InvalidGrant) as refused:
        StandingGrant.from_dict(data)
    assert refused.value.field.startswith(field), (refused.value.field, str(refused.value))
    assert isinstance(refused.value, ValueError)


@pytest.mark.parametrize(
    "change",
    [
        rule(
            "SG-008",
            ceiling(reversibility="guaranteed", rollback_contract="release:unpublish"),
            note="guaranteed with an inverse",
        ),
        rule(
            "SG-008",
            ceiling(mutation="none", subject="none", reversibility="not_applicable", rollback_contract=None),
            note="not_applicable for a read",
        ),
        rule("SG-009", ceiling(authority="read"), note="read"),
        rule("SG-009", ceiling(authority="none"), note="none"),
        rule("SG-011", ceiling(rollback_contract="release:unpublish"), note="compensatable with an operation name"),
        rule("SG-050", lambda d: d["operations"][0].update(operation="Release.Publish"), note="inside spelling free"),
        rule("SG-017", lambda d: d.update(expires_at="2026-11-01T00:00:00Z"), note="an expiry"),
        rule(
            "SG-018",
            lambda d: d.update(supersedes=["release-stable-0"], lifts="the suspension of 2026-10-01"),
            note="supersedes and lifts",
        ),
        rule("SG-046", lambda d: d.update(undo='don\'t <panic> & "unpublish"'), note="a sentence with HTML"),
        rule("SG-054", lambda d: d.update(to=["ci-bot", "équipe-ops"]), note="a seat in any script"),
    ],
)
def test_a_document_that_can_be_written(change: Change) -> None:
    data = b.document()
    change(data)
    grant = StandingGrant.from_dict(data)
    assert StandingGrant.from_json(grant.to_json()) == grant


@covers("SG-001", "SG-003", "SG-005")
def test_seats_are_bytes_and_operations_are_identities() -> None:
    grant = b.grant(to=["ci-bot"])
    assert grant.lends_to("ci-bot") and not grant.lends_to("CI-bot") and not grant.lends_to("ci-bot ")
    for spelling in ("release:publish", "release.publish", "release_publish", "RELEASE:PUBLISH"):
        assert grant.names(b.call(operation=spelling)), spelling
    assert grant.operations[0] == NamedCall("release:publish", {"channel": "stable"})
    assert not StandingJudge.judge(grant, b.standing(), b.call(seat="CI-bot")).named()


@covers("SG-012")
def test_a_ceiling_with_descents_is_refused() -> None:
    good = b.grant()
    descent = Descent("dry_run", True, EffectProfile.read_only(), "a dry run changes nothing")
    with_descent = EffectProfile(
        Mutation.PERSISTENT,
        Externality.PUBLIC,
        Reversibility.COMPENSATABLE,
        Authority.WRITE_AS_USER,
        subject=Subject.DATA,
        descents=(descent,),
    )
    with pytest.raises(InvalidGrant, match="descents"):
        _rebuild(good, ceiling=with_descent)


def _rebuild(grant: StandingGrant, **changes: Any) -> StandingGrant:
    fields: dict[str, Any] = {name: getattr(grant, name) for name in grant.__dataclass_fields__}
    fields.update(changes)
    return StandingGrant(**fields)


@covers("SG-021", "SG-053")
def test_a_grant_built_in_code_is_held_to_the_readers_rules_and_reads_back() -> None:
    grant = StandingGrant(
        id="g-1",
        to=["ci-bot"],
        operations=[NamedCall("release:publish", {"channel": "stable", "n": 7, "dry": False})],
        ceiling=b.PUBLISH,
        conditions=[Condition("scan", "the scan is clean", NamedCall("release:scan", {"strict": True}, ("archive",)))],
        falsifier=Falsifier("leaks", "nobody reports a leak", NamedCall("reports:watch"), 3600),
        undo="unpublish it",
        expires_at=datetime(2026, 11, 1, tzinfo=UTC),
    )
    assert StandingGrant.from_json(grant.to_json()) == grant
    assert StandingGrant.from_dict(grant.to_dict()) == grant
    for bad in ({"id": " g-1"}, {"undo": "a\tb"}, {"to": ["a\u200b"]}, {"expires_at": "2026-11-01 00:00:00Z"}):
        with pytest.raises(InvalidGrant):
            _rebuild(grant, **bad)


_names = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True)
_fixed = st.one_of(
    st.from_regex(r"[!-~]{1,5}( [!-~]{1,5}){0,2}", fullmatch=True),
    st.integers(-(2**63), 2**63 - 1),
    st.booleans(),
)
_sentences = st.text(st.characters(codec="utf-8"), min_size=1, max_size=30).filter(Canonical.one_line)


@settings(max_examples=60, deadline=None)
@given(
    seats=st.lists(_sentences, min_size=1, max_size=3, unique=True),
    fixed=st.dictionaries(_names, _fixed, max_size=3),
    undo=_sentences,
    statement=_sentences,
)
def test_every_constructible_grant_reads_back_from_its_own_spelling(
    seats: list[str], fixed: dict[str, Any], undo: str, statement: str
) -> None:
    grant = _rebuild(
        b.grant(),
        to=seats,
        operations=[NamedCall("release:publish", fixed)],
        undo=undo,
        conditions=[Condition("c", statement, NamedCall("release:scan"))],
    )
    assert StandingGrant.from_json(grant.to_json()) == grant
    assert StandingGrant.from_json(grant.to_json()).digest() == grant.digest()


@covers("SG-102")
def test_the_canonical_spelling_states_every_key() -> None:
    spelled = b.grant().to_dict()
    assert spelled["supersedes"] is None and spelled["lifts"] is None and spelled["expires_at"] is None
    assert set(spelled) == {
        "id", "to", "operations", "ceiling", "conditions", "falsifier", "undo", "expires_at", "supersedes", "lifts"
    }  # fmt: skip
    assert set(spelled["ceiling"]) == {
        "mutation", "externality", "reversibility", "authority", "subject", "rollback_contract", "escalates_on"
    }  # fmt: skip
    assert b.grant().digest() == StandingGrant.from_json(b.text()).digest()

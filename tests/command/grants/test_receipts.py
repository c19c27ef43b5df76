"""Receipts and the table that reads them; GrantStanding, where nothing says yes by default."""

from __future__ import annotations

from typing import Any

import pytest

from milpa_chat.command import Operation
from milpa_chat.command.grants import (
    NOT_READ,
    NOT_VERIFIED,
    ConditionReceipt,
    GrantStanding,
    GrantState,
    InvalidGrant,
    Measured,
    NamedCall,
    StandingCheck,
    StandingJudge,
    read_condition,
)
from tests.command.grants import builders as b
from tests.command.grants.rules import covers, rule

BY = NamedCall("release:scan", {"strict": True}, ("archive",))
LENIENT = {"strict": True, "archive": "a.tgz", "lenient": True}


def table(*receipts: ConditionReceipt, instrument: str | None = b.SCANNER) -> Measured:
    return read_condition(BY, b.CONTENT, list(receipts), instrument).measured


@covers("SG-120")
def test_a_receipt_says_which_run_which_content_which_instrument_and_green_or_red() -> None:
    receipt = ConditionReceipt("release:scan", b.SCAN, b.CONTENT, b.SCANNER, True, at=b.NOW)
    assert receipt.to_dict() == {
        "by": {"operation": "release:scan", "arguments": b.SCAN},
        "content": b.CONTENT,
        "instrument": b.SCANNER,
        "holds": True,
        "at": "2026-10-20T12:00:00+00:00",
    }
    assert ConditionReceipt.from_dict(receipt.to_dict()) == receipt


@pytest.mark.parametrize(
    "change",
    [
        rule("SG-121", lambda r: r.update(by={"arguments": {}}), note="by names no operation"),
        rule("SG-121", lambda r: r["by"].update(operation=7), note="an operation that is not text"),
        rule("SG-121", lambda r: r["by"].update(operation="release scan"), note="not an operation name"),
        rule("SG-121", lambda r: r.update(content=" " + b.CONTENT), note="a space around the content"),
        rule("SG-121", lambda r: r.update(instrument=b.SCANNER + "\n"), note="a line break after the instrument"),
        rule("SG-121", lambda r: r.update(holds="yes"), note="holds that is not true/false"),
        rule("SG-121", lambda r: r.update(extra=1), note="a key it does not read"),
        rule("SG-121", lambda r: r.update(at="yesterday"), note="an at that is no instant"),
    ],
)
def test_a_row_that_is_not_a_receipt_reads_as_none(change: Any) -> None:
    row = b.green().to_dict()
    change(row)
    assert ConditionReceipt.from_dict(row) is None


@covers("SG-122", "SG-134", "SG-192")
def test_none_from_from_dict_is_a_fault_of_the_record_not_nothing_measured() -> None:
    receipts = [b.red(), ConditionReceipt.from_dict({"by": {}}), b.green()]
    verdict = StandingJudge.judge(b.grant(), b.standing(receipts=receipts), b.call())
    assert verdict.failed is StandingCheck.SIGNATURE
    assert "not a receipt (item 1)" in verdict.sentence
    # Dropping the unreadable line would let the green after a red speak: the judge never does.
    dropped = b.standing(receipts=[r for r in receipts if r is not None])
    assert StandingJudge.judge(b.grant(), dropped, b.call()).passes()


@pytest.mark.parametrize(
    ("receipts", "measured"),
    [
        rule("SG-125", [b.green()], Measured.HOLDS, note="green from the described run"),
        rule("SG-125", [b.green(arguments=LENIENT)], Measured.NEVER_MEASURED, note="green from a run with one more"),
        rule(
            "SG-125",
            [b.green(), b.green(arguments=LENIENT)],
            Measured.HOLDS,
            note="a green from another run does not hide the one before",
        ),
        rule("SG-125", [b.green(arguments={"archive": "a"})], Measured.NEVER_MEASURED, note="fixed one missing"),
        rule("SG-125", [b.green(arguments={"strict": False})], Measured.NEVER_MEASURED, note="fixed one different"),
        rule("SG-125", [b.green(arguments={})], Measured.NEVER_MEASURED, note="no argument at all"),
        rule(
            "SG-125",
            [b.green(), b.red(arguments={"archive": "x", "lenient": True})],
            Measured.SAYS_NO,
            note="a red from any run",
        ),
        rule("SG-125", [b.red(), b.green()], Measured.HOLDS, note="measured green again"),
        rule("SG-125", [b.green(), b.red(b.OTHER_CONTENT)], Measured.HOLDS, note="a red about another content"),
        rule("SG-123", [b.green(b.OTHER_CONTENT)], Measured.NEVER_MEASURED, note="joined by content"),
        rule("SG-124", [b.green(), b.red()], Measured.SAYS_NO, note="the last one speaks"),
        rule(
            "SG-126",
            [b.green(instrument="sha256:" + "99" * 32)],
            Measured.NEVER_MEASURED,
            note="a green from an old instrument",
        ),
        rule(
            "SG-126",
            [b.green(), b.green(instrument="sha256:" + "99" * 32)],
            Measured.HOLDS,
            note="an old instrument's green is skipped",
        ),
    ],
)
def test_the_receipts_table(receipts: list[ConditionReceipt], measured: Measured) -> None:
    assert table(*receipts) is measured


@covers("SG-125", "SG-126")
def test_another_operation_says_nothing_and_a_red_counts_from_any_instrument() -> None:
    other = ConditionReceipt("release:lint", b.SCAN, b.CONTENT, b.SCANNER, False)
    assert table(b.green(), other) is Measured.HOLDS
    old_red = ConditionReceipt("release:scan", b.SCAN, b.CONTENT, "sha256:" + "99" * 32, False)
    assert table(b.green(), old_red) is Measured.SAYS_NO
    same_identity = ConditionReceipt("Release_Scan", b.SCAN, b.CONTENT, b.SCANNER, True)
    assert table(same_identity) is Measured.HOLDS


@covers("SG-127")
def test_no_current_instrument_means_no_green_counts() -> None:
    assert table(b.green(), instrument=None) is Measured.NO_INSTRUMENT
    verdict = StandingJudge.judge(b.grant(), b.standing(instruments={}), b.call())
    assert verdict.failed is StandingCheck.CONDITIONS and "no instrument digest" in verdict.sentence


@covers("SG-128")
def test_the_instrument_digest_pins_declaration_and_handler_but_not_what_it_delegates_to() -> None:
    def scan(arguments: dict[str, Any]) -> dict[str, Any]:
        return helper(arguments)

    def helper(arguments: dict[str, Any]) -> dict[str, Any]:
        return {"clean": True}

    op = Operation("release:scan", "Scan a release archive", scan, mutating=False)
    digest = op.instrument_digest()
    assert digest is not None and digest.startswith("sha256:")
    assert Operation("release:scan", "Scan a release archive", scan, mutating=False).instrument_digest() == digest
    assert Operation("release:scan", "Scan it strictly", scan).instrument_digest() != digest
    assert Operation("release:scan", "Scan a release archive", helper).instrument_digest() != digest
    assert Operation("release:scan", "Scan a release archive", len).instrument_digest() is None


def test_an_operation_says_what_content_a_call_acts_on() -> None:
    op = Operation("release:publish", "Publish", lambda a: a, acts_on=lambda a: a.get("digest"), mutating=True)
    assert op.content_of({"digest": b.CONTENT}) == b.CONTENT
    assert op.content_of({"digest": b.CONTENT + " "}) is None
    assert op.content_of({"digest": 7}) is None
    assert op.content_of({}) is None
    assert Operation("x", "X", lambda a: a).content_of({"digest": b.CONTENT}) is None


@covers("SG-130", "SG-131", "SG-132", "SG-133", "SG-135", "SG-191")
def test_nothing_in_a_standing_says_yes_by_default() -> None:
    with pytest.raises(TypeError):
        GrantStanding()  # type: ignore[call-arg]
    bare = GrantStanding(GrantState.IN_FORCE)
    assert (bare.signature_fault, bare.record_fault) == (NOT_VERIFIED, NOT_READ)
    assert bare.falsifier_seen_at is None and bare.instruments == {} and bare.receipts == ()
    verdict = StandingJudge.judge(b.grant(), bare, b.call())
    assert verdict.failed is StandingCheck.SIGNATURE and NOT_VERIFIED in verdict.sentence
    signed = GrantStanding(GrantState.IN_FORCE, signature_fault=None)
    assert StandingJudge.judge(b.grant(), signed, b.call()).failed is StandingCheck.SIGNATURE
    read = GrantStanding(GrantState.IN_FORCE, signature_fault=None, record_fault=None)
    assert StandingJudge.judge(b.grant(), read, b.call()).failed is StandingCheck.WATCHED
    assert GrantStanding("suspended").state is GrantState.SUSPENDED  # type: ignore[arg-type]  # read at run time
    with pytest.raises(InvalidGrant, match="state"):
        GrantStanding("active")  # type: ignore[arg-type]
    assert [s.value for s in GrantState] == ["in_force", "suspended", "superseded", "revoked"]

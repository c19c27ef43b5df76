"""expires_at: one form, a real instant, spelled in UTC; past it at the exact instant."""

from __future__ import annotations

import pytest

from milpa_chat.command.grants import InvalidGrant, StandingGrant
from tests.command.grants import builders as b
from tests.command.grants.rules import covers, rule


@pytest.mark.parametrize(
    ("given_as", "canonical"),
    [
        rule("SG-090", "2026-11-01T00:00:00Z", "2026-11-01T00:00:00Z", note="Z"),
        rule("SG-090", "2026-11-01T00:00:00+01:00", "2026-10-31T23:00:00Z", note="an offset"),
        rule("SG-093", "2026-11-01T05:30:00-02:30", "2026-11-01T08:00:00Z", note="spelled in UTC"),
        rule("SG-092", "0001-01-01T00:30:00+00:00", "0001-01-01T00:30:00Z", note="the first year"),
    ],
)
def test_expiry_forms_taken(given_as: str, canonical: str) -> None:
    grant = b.grant(expires_at=given_as)
    assert grant.to_dict()["expires_at"] == canonical
    assert StandingGrant.from_json(grant.to_json()) == grant


@pytest.mark.parametrize(
    "given_as",
    [
        rule("SG-090", "2026-11-01 00:00:00Z", note="a space for T"),
        rule("SG-090", "2026-11-01T00:00Z", note="no seconds"),
        rule("SG-090", "2026-11-01T00:00:00.000Z", note="a fraction"),
        rule("SG-090", "2026-11-01T00:00:00z", note="lowercase z"),
        rule("SG-090", "2026-11-01", note="a date only"),
        rule("SG-090", "2026-11-01T00:00:00+0100", note="an offset without colon"),
        rule("SG-090", "２０２６-11-01T00:00:00Z", note="other digits"),
        rule("SG-091", "2026-02-30T00:00:00Z", note="no such day"),
        rule("SG-091", "2026-11-01T24:00:00Z", note="hour 24"),
        rule("SG-091", "2026-11-01T00:00:60Z", note="second 60"),
        rule("SG-091", "2026-11-01T00:00:00+01:60", note="offset minutes 60"),
        rule("SG-091", "2026-11-01T00:00:00+24:00", note="offset hours 24"),
        rule("SG-092", "0000-01-01T00:30:00+01:00", note="year -1 in UTC"),
        rule("SG-092", "9999-12-31T23:30:00-01:00", note="year 10000 in UTC"),
    ],
)
def test_expiry_forms_refused(given_as: str) -> None:
    with pytest.raises(InvalidGrant) as refused:
        b.grant(expires_at=given_as)
    assert refused.value.field == "expires_at"


@covers("SG-094")
def test_past_its_own_date_at_the_exact_instant() -> None:
    grant = b.grant(expires_at="2026-10-20T12:00:00Z")
    assert grant.expired(b.NOW)
    assert not grant.expired(b.NOW.replace(second=0, minute=59, hour=11))

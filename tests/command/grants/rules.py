"""The numbered rules of standing grants, and how a test says which it covers.

A table row names its rule in its id (``rule("SG-031", ...)`` is ``pytest.param(..., id="SG-031 ...")``); a
test that is not a table row says it with ``@covers("SG-140")``. test_coverage.py asserts every rule
listed here is covered by some test.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest

#: Every numbered rule of the standing-grant contract, in order.
ALL_RULES: tuple[str, ...] = (
    "SG-001",
    "SG-002",
    "SG-003",
    "SG-004",
    "SG-005",
    "SG-006",
    "SG-007",
    "SG-008",
    "SG-009",
    "SG-010",
    "SG-011",
    "SG-012",
    "SG-013",
    "SG-014",
    "SG-015",
    "SG-016",
    "SG-017",
    "SG-018",
    "SG-019",
    "SG-020",
    "SG-021",
    "SG-022",
    "SG-023",
    "SG-030",
    "SG-031",
    "SG-032",
    "SG-033",
    "SG-034",
    "SG-035",
    "SG-036",
    "SG-040",
    "SG-041",
    "SG-042",
    "SG-043",
    "SG-044",
    "SG-045",
    "SG-046",
    "SG-047",
    "SG-048",
    "SG-049",
    "SG-050",
    "SG-051",
    "SG-052",
    "SG-053",
    "SG-054",
    "SG-060",
    "SG-061",
    "SG-062",
    "SG-063",
    "SG-064",
    "SG-065",
    "SG-066",
    "SG-067",
    "SG-068",
    "SG-069",
    "SG-070",
    "SG-071",
    "SG-072",
    "SG-073",
    "SG-074",
    "SG-090",
    "SG-091",
    "SG-092",
    "SG-093",
    "SG-094",
    "SG-100",
    "SG-101",
    "SG-102",
    "SG-103",
    "SG-104",
    "SG-105",
    "SG-106",
    "SG-107",
    "SG-110",
    "SG-111",
    "SG-112",
    "SG-113",
    "SG-120",
    "SG-121",
    "SG-122",
    "SG-123",
    "SG-124",
    "SG-125",
    "SG-126",
    "SG-127",
    "SG-128",
    "SG-130",
    "SG-131",
    "SG-132",
    "SG-133",
    "SG-134",
    "SG-135",
    "SG-140",
    "SG-141",
    "SG-142",
    "SG-143",
    "SG-144",
    "SG-145",
    "SG-146",
    "SG-147",
    "SG-148",
    "SG-149",
    "SG-160",
    "SG-161",
    "SG-162",
    "SG-163",
    "SG-164",
    "SG-165",
    "SG-166",
    "SG-167",
    "SG-168",
    "SG-169",
    "SG-170",
    "SG-171",
    "SG-172",
    "SG-173",
    "SG-180",
    "SG-181",
    "SG-182",
    "SG-183",
    "SG-184",
    "SG-185",
    "SG-186",
    "SG-187",
    "SG-188",
    "SG-190",
    "SG-191",
    "SG-192",
    "SG-193",
    "SG-194",
    "SG-195",
    "SG-196",
    "SG-197",
)

F = TypeVar("F", bound=Callable[..., Any])


def rule(rule_id: str, *values: Any, note: str = "") -> Any:
    """One table row for ``rule_id``: ``pytest.param(*values, id="SG-nnn note")``."""
    assert rule_id in ALL_RULES, rule_id
    return pytest.param(*values, id=f"{rule_id} {note}".strip())


def covers(*rule_ids: str) -> Callable[[F], F]:
    """Marks a test as the one that checks ``rule_ids``."""
    for rule_id in rule_ids:
        assert rule_id in ALL_RULES, rule_id

    def mark(test: F) -> F:
        test.__dict__.setdefault("covers", set()).update(rule_ids)
        return test

    return mark

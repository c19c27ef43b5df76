"""Signals against rubber-stamping: per approver, over a window, how they decide.

People approve almost everything they are shown. These figures, read from the approval records
themselves, let a team see it: decisions, the approve rate, the median time to decide (from the
request to that person's vote or decision), and how many approvals came faster than the card can
be read (its arguments at a brisk 25 characters a second, at least 3 s).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from milpa_chat.runtime.approval import Approval

__all__ = ["ApproverStats", "approver_stats", "reading_seconds"]

READ_CHARS_PER_SECOND = 25.0
MIN_READ_SECONDS = 3.0


def reading_seconds(approval: Approval) -> float:
    """How long the card takes to read: its tool, summary and arguments at 25 characters a second (≥ 3 s)."""
    text = f"{approval.label} {approval.data.get('summary', '')} {json.dumps(approval.args, default=str)}"
    return max(MIN_READ_SECONDS, len(text) / READ_CHARS_PER_SECOND)


@dataclass(frozen=True, slots=True)
class ApproverStats:
    principal: str
    name: str
    decisions: int
    approved: int
    rejected: int
    median_seconds: float | None
    too_fast: int
    #: Decisions taken from a batch card ("Approve all N" / "Reject all N"), each item counted.
    batched: int = 0

    @property
    def approve_rate(self) -> float:
        return self.approved / self.decisions if self.decisions else 0.0

    def line(self) -> str:
        median = "-" if self.median_seconds is None else f"{self.median_seconds:.0f} s"
        decisions = f"{self.decisions} decision" + ("" if self.decisions == 1 else "s")
        batched = f", {self.batched} from batches" if self.batched else ""
        return (
            f"{self.name} ({self.principal}): {decisions}, {self.approve_rate:.0%} approved, "
            f"median {median} to decide, {self.too_fast} approved faster than the card can be read{batched}"
        )


@dataclass
class _Tally:
    name: str
    times: list[float] = field(default_factory=list)
    approved: int = 0
    rejected: int = 0
    fast: int = 0
    batched: int = 0


def _acts(a: Approval) -> list[tuple[str, str, float, bool, bool]]:
    """``(principal, name, when, approved, from a batch)`` of everyone who decided ``a``."""
    acts = [
        (str(v["principal"]), str(v.get("name") or v["principal"]), float(v["at"]), True, _batch(v.get("via")))
        for v in a.votes
    ]
    if a.state == "rejected" and a.data.get("decided_by"):
        acts.append(
            (
                str(a.data["decided_by"]),
                str(a.data.get("decided_by_name") or a.data["decided_by"]),
                float(a.data.get("decided_at") or a.data.get("created_at", 0)),
                False,
                _batch(a.data.get("decided_via")),
            )
        )
    return acts


def _batch(via: object) -> bool:
    return isinstance(via, str) and via.endswith("/batch")


def approver_stats(approvals: Iterable[Approval], *, since: float | None = None) -> list[ApproverStats]:
    """Figures per approver over verification approvals decided since ``since`` (all when ``None``),
    most decisions first."""
    tallies: dict[str, _Tally] = {}
    for a in approvals:
        if a.kind != "verification":
            continue
        created = float(a.data.get("created_at", 0))
        for principal, name, at, approved, batched in _acts(a):
            if since is not None and at < since:
                continue
            tally = tallies.setdefault(principal, _Tally(name))
            took = max(0.0, at - created)
            tally.times.append(took)
            tally.batched += batched
            if approved:
                tally.approved += 1
                tally.fast += took < reading_seconds(a)
            else:
                tally.rejected += 1
    stats = [
        ApproverStats(
            p,
            t.name,
            len(t.times),
            t.approved,
            t.rejected,
            statistics.median(t.times) if t.times else None,
            t.fast,
            t.batched,
        )
        for p, t in tallies.items()
    ]
    return sorted(stats, key=lambda s: (-s.decisions, s.principal))

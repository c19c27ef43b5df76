"""Ratios that hold still: a kit row against its fair peer, measured in alternating rounds.

Every app runs in an OS process of its own, pinned to a CPU that no server, load or other app uses while it is tapped
(``bench/_apps.py``); a round taps the kit's app and its fair peer a slice of a few taps at a time, taking turns in an
order rotated every slice (A B C, B C A, ...), every round with its apps started anew and warmed up. Each round gives
one ratio, the peer's CPU seconds per tap over the kit's (each its own process's ``time.process_time()``, over the
same wall-clock seconds as the row's rates): 100 % means the kit does the tap on the same CPU as a handler written
without it. The row reports the median ratio and its spread (the largest minus the smallest ratio of the rounds, in
percentage points); a row is *decided* when the spread is under 5 points, and meets the target when its median is at
least 90 %. A process keeps for its life what it settled into at start-up (``bench/telegram.py`` says what moves
with it): a round over more sets of processes narrows the spread, more rounds of one set each do not.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

DECIDED_SPREAD = 0.05  # a row whose rounds disagree by less than this is decided
TARGET = 0.90  # the kit's rate against its fair peer's


def summary(ratios: Sequence[float]) -> tuple[float, float, bool]:
    """(median, spread, decided) of one row's per-round ratios."""
    spread = max(ratios) - min(ratios) if len(ratios) > 1 else float("inf")
    return statistics.median(ratios), spread, spread < DECIDED_SPREAD


def header() -> list[str]:
    return [
        "| row | fair peer | ratio each round (peer CPU / kit CPU a tap) | median | spread | decided | ≥ 90 % |",
        "|---|---|---|---:|---:|---|---|",
    ]


def line(row: str, peer: str, ratios: Sequence[float]) -> str:
    median, spread, decided = summary(ratios)
    rounds = " ".join(f"{r:.0%}" for r in ratios)
    shown = f"{spread * 100:.1f} pt" if spread != float("inf") else "—"
    verdict = "yes" if decided else "no"
    return f"| {row} | {peer} | {rounds} | {median:.0%} | {shown} | {verdict} | {'yes' if median >= TARGET else 'no'} |"

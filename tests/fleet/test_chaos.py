"""Chaos that ends in figures: two Telegram webhook workers and two Slack HTTP workers behind HAProxy on one
PostgreSQL database, driven by people on both platforms while workers are SIGKILLed and restarted and
their database connections terminated. At the end every approved request ran exactly once (counted in
the tools' own ``executions`` stream), every approval is settled or visibly uncertain, every card shows
its record, and the audit trail's chain holds.

The decision latency (a person's first tap to the card showing the decision) is printed with the other
figures, not asserted: it measures the machine as much as the fleet. ``python bench/fleet.py --chaos 30``
prints it too."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._chaos_run import chaos_figures

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

SEED = 16
CHAOS_SECONDS = 30.0


async def test_chaos_ends_in_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    figures, fleet = await chaos_figures(tmp_path, SEED, CHAOS_SECONDS)
    with capsys.disabled():
        print(f"\nfleet chaos figures (seed {SEED}, {CHAOS_SECONDS:.0f} s of chaos, 2 Telegram + 2 Slack workers):")
        for name, value in figures.items():
            if not name.startswith("_"):
                print(f"  {name}: {value}")
    (tmp_path / "wrong.txt").write_text("\n".join(figures["_wrong"]))
    assert figures["approvals"] >= 20 and figures["worker kills"] >= 5, figures
    assert figures["approved runs not executed exactly once"] == 0, figures
    assert figures["executions of requests not approved"] == 0, figures
    assert figures["approvals neither terminal nor visibly effect_uncertain"] == 0, figures
    assert figures["cards not converged to their record"] == 0, (figures, figures.get("_wrong"), fleet.logs())
    assert figures["audit trail"].startswith("The audit trail holds"), figures
    # the latency has samples: taps were decided and the decision reached the tapped card (its value is printed)
    assert figures["decisions seen on a card after a tap"] > 0, figures

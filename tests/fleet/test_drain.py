"""A worker told to stop (SIGTERM, as systemd does) finishes what it accepted: a confirmed run that is still
going when the signal comes ends Done, once, and the worker exits 0."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.store._workers import open_spec

from ._chaos import slack_cards, telegram_cards
from ._fleet import SLACK_WORK, SLACK_WRITERS, TG_WRITERS, Fleet, running_fleet
from ._records import approvals_in

pytestmark = pytest.mark.slow
RUN_SECONDS = 3.0


async def confirm_slow_run(fleet: Fleet, platform: str) -> None:
    """Ask for a slow run and confirm it; returns once the tap was acknowledged (the run is going)."""
    if platform == "telegram":
        writer = TG_WRITERS[0]
        await fleet.tg.send_message(writer.id, writer, f"/slow_archive 7 {RUN_SECONDS}")
        await fleet.tg.wait_until(lambda: any("confirm" in c.actions for c in telegram_cards(fleet)), timeout=15)
        card = next(c for c in telegram_cards(fleet) if "confirm" in c.actions)
        tap = await fleet.tg.tap(int(card.chat), int(card.message_id), writer, card.actions["confirm"])
        assert [d.status for d in tap.deliveries] == [200]
        return
    answer = await fleet.slack.command("/milpa", f"slow_archive 7 {RUN_SECONDS}", user=SLACK_WRITERS[0],
                                       channel=SLACK_WORK)
    assert answer.status == 200
    await fleet.api.wait_for(lambda: next((c for c in slack_cards(fleet) if "confirm" in c.actions), None), 15)
    card = next(c for c in slack_cards(fleet) if "confirm" in c.actions)
    from milpa_chat.testing.slack import SlackMessage

    assert isinstance(card.raw, SlackMessage)
    click = await fleet.slack.click(card.raw, card.actions["confirm"], user=SLACK_WRITERS[0],
                                    value=f"confirm:{card.approval_id}")
    assert click.status == 200


async def test_sigterm_drains_the_runs_in_progress_on_both_platforms(tmp_path: Path) -> None:
    async with running_fleet(tmp_path, telegram=1, slack=1) as fleet:
        await confirm_slow_run(fleet, "telegram")
        await confirm_slow_run(fleet, "slack")
        await asyncio.sleep(0.5)  # both runs have started
        stopped = time.monotonic()
        codes = await asyncio.gather(*[asyncio.to_thread(w.terminate, 30.0) for w in fleet.workers])
        took = time.monotonic() - stopped
        assert codes == [0, 0], fleet.logs()
        assert all("drained and stopped" in w.log.read_text() for w in fleet.workers)
        store = open_spec(fleet.store_spec(), max_size=1)
        try:
            approvals = await approvals_in(store)
            assert [a.state for a in approvals.values()] == ["executed", "executed"], fleet.logs()
            runs = sorted(e.value["key"] for e in await store.read("executions"))
            assert runs == sorted(approvals)
        finally:
            await store.close()
        print(f"\nboth workers drained their {RUN_SECONDS} s runs and exited 0 after {took:.2f} s")

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


@pytest.mark.parametrize("platform", ["telegram", "slack"])
async def test_sigterm_drains_a_run_in_progress(tmp_path: Path, platform: str) -> None:
    async with running_fleet(tmp_path, telegram=1, slack=1) as fleet:
        await confirm_slow_run(fleet, platform)
        await asyncio.sleep(0.5)  # the run has started
        worker = fleet.of(platform)[0]
        stopped = time.monotonic()
        code = await asyncio.to_thread(worker.terminate, 30.0)
        took = time.monotonic() - stopped
        assert code == 0, fleet.logs()
        assert "drained and stopped" in worker.log.read_text()
        store = open_spec(fleet.store_spec(), max_size=1)
        try:
            approvals = await approvals_in(store)
            assert [a.state for a in approvals.values()] == ["executed"], fleet.logs()
            runs = [e.value["key"] for e in await store.read("executions")]
            assert runs == list(approvals)
        finally:
            await store.close()
        print(f"\n{platform} worker drained a {RUN_SECONDS} s run and exited 0 after {took:.2f} s")

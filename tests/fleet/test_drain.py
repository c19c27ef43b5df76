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

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
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
    answer = await fleet.slack.command(
        "/milpa", f"slow_archive 7 {RUN_SECONDS}", user=SLACK_WRITERS[0], channel=SLACK_WORK
    )
    assert answer.status == 200
    await fleet.api.wait_for(lambda: next((c for c in slack_cards(fleet) if "confirm" in c.actions), None), 15)
    card = next(c for c in slack_cards(fleet) if "confirm" in c.actions)
    from milpa_chat.testing.slack import SlackMessage

    assert isinstance(card.raw, SlackMessage)
    click = await fleet.slack.click(
        card.raw, card.actions["confirm"], user=SLACK_WRITERS[0], value=f"confirm:{card.approval_id}"
    )
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


async def test_a_rolling_restart_loses_no_request(tmp_path: Path) -> None:
    """SIGTERM and restart each Slack worker in turn while requests keep coming: every request is answered
    200 through the balancer and every one is handled once."""
    async with running_fleet(tmp_path, telegram=0, slack=2) as fleet:
        answers: list[int] = []

        async def keep_asking(until: float) -> None:
            while time.monotonic() < until:
                answers.append(
                    (await fleet.slack.command("/milpa", "status", user=SLACK_WRITERS[1], channel=SLACK_WORK)).status
                )
                await asyncio.sleep(0.1)

        async def restart_each() -> None:
            for worker in fleet.of("slack"):
                await asyncio.sleep(0.5)
                assert await asyncio.to_thread(worker.terminate, 30.0) == 0
                worker.start()
                await worker.ready()
                await asyncio.sleep(1.0)  # two of the balancer's checks (every 500 ms): it is back in

        until = time.monotonic() + 7.0
        await asyncio.gather(keep_asking(until), restart_each())
        assert answers and set(answers) == {200}, answers
        replies = lambda: [m for m in fleet.api.messages(SLACK_WORK) if "Service up" in m.all_text()]  # noqa: E731
        await fleet.api.wait_for(lambda: len(replies()) >= len(answers) or None, 15)
        assert len(replies()) == len(answers)
        print(f"\nrolling restart of 2 Slack workers: {len(answers)} requests, all answered 200, each handled once")

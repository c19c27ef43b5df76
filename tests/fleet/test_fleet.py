"""The fleet as it is deployed: the committed balancer config and environment are what the workers use,
a bad configuration is refused with what to set, and a request made on Telegram is approved on Slack
through the balancer (run once, every card edited)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from milpa_chat.fleet import FleetConfig, FleetConfigError, haproxy_config, main
from tests.store._workers import open_spec

from ._fleet import SLACK_APPROVERS, SLACK_MANAGERS, TG_APPROVERS, TG_WRITERS, running_fleet
from ._records import approvals_in, unconverged

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_balancer_config_is_what_the_fleet_generates() -> None:
    expected = haproxy_config(
        443,
        ["127.0.0.1:8081", "127.0.0.1:8082"],
        ["127.0.0.1:8091", "127.0.0.1:8092"],
        bind="0.0.0.0",
        tls_cert="/etc/haproxy/certs/milpa.pem",
    )
    assert (ROOT / "deploy" / "haproxy.cfg").read_text() == expected


def test_the_example_environment_is_what_the_workers_read(tmp_path: Path) -> None:
    example = dict(
        line.split("=", 1)
        for line in (ROOT / "deploy" / "fleet.env.example").read_text().splitlines()
        if line and not line.startswith("#")
    )
    identities = tmp_path / "identities.toml"
    identities.write_text("")
    config = FleetConfig.from_env({**example, "MILPA_IDENTITIES": str(identities)})
    config.check("telegram")
    config.check("slack")
    assert set(config.telegram) | set(config.slack) == {k for k in example if k.startswith(("TELEGRAM_", "SLACK_"))}
    with pytest.raises(FleetConfigError, match="MILPA_STORE must be the fleet's PostgreSQL database"):
        FleetConfig.from_env({**example, "MILPA_STORE": "sqlite:///one.db", "MILPA_IDENTITIES": str(identities)})
    with pytest.raises(FleetConfigError, match="TELEGRAM_WEBHOOK_SECRET"):
        FleetConfig.from_env(
            {k: v for k, v in example.items() if k != "TELEGRAM_WEBHOOK_SECRET"} | {"MILPA_IDENTITIES": str(identities)}
        ).check("telegram")


def test_a_worker_without_a_fleet_database_says_what_to_set(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["slack"], env={"MILPA_STORE": "milpa.db"}) == 2
    assert "MILPA_STORE must be the fleet's PostgreSQL database" in capsys.readouterr().err
    assert main(["serve"], env={}) == 2
    assert "usage: python -m milpa_chat.fleet" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.postgres
async def test_requested_on_telegram_approved_on_slack_through_the_balancer(tmp_path: Path) -> None:
    async with running_fleet(tmp_path, telegram=1, slack=1) as fleet:
        asked = await fleet.tg.send_message(TG_WRITERS[0].id, TG_WRITERS[0], "/pay ACME 12")
        assert [d.status for d in asked.deliveries] == [200]
        tg_card = await fleet.tg.wait_for_message(TG_APPROVERS, since=asked, timeout=15)
        slack_card = await fleet.api.wait_for_message(SLACK_APPROVERS, timeout=15)
        approve = next(b for b in slack_card.buttons() if str(b.get("value", "")).startswith("approve:"))
        answer = await fleet.slack.click(
            slack_card, str(approve["action_id"]), user=SLACK_MANAGERS[0], value=str(approve["value"])
        )
        assert answer.status == 200
        await fleet.tg.wait_until(lambda: not fleet.tg.message(TG_APPROVERS, tg_card.message_id).buttons, timeout=15)
        store = open_spec(fleet.store_spec(), max_size=1)
        try:
            await fleet.tg.wait_until(  # the result, where it was asked (not the requester's copy of the card)
                lambda: any("Paid 12.00 EUR" in (m.text or "") for m in fleet.tg.messages(TG_WRITERS[0].id)),
                timeout=15,
                what="the result in the requester's chat",
            )
            approvals = await approvals_in(store)
            assert [a.state for a in approvals.values()] == ["executed"]
            assert [e.value["key"] for e in await store.read("executions")] == list(approvals)
            deadline = time.monotonic() + 10
            while unconverged(fleet, approvals) != ([], []) and time.monotonic() < deadline:
                await asyncio.sleep(0.2)  # the last edits are on their way
                approvals = await approvals_in(store)
            assert unconverged(fleet, approvals) == ([], [])
        finally:
            await store.close()

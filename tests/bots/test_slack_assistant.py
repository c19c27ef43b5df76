"""``python -m bots.slack_assistant`` as a real process: configuration errors, and a process restart between a
payment request and its approval (same SQLite file), with signed requests over HTTP and the local Web API."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from milpa_chat.testing.slack import SlackApiServer, SlackEvents

from .conftest_slack import ALICE, APPROVERS, MARIA, SECRET, TEAM, TOKEN, WORK, button

REPO = Path(__file__).resolve().parents[2]
IDENTITIES = f"""
[roles]
writer = ["notes:read", "notes:write", "payments:send"]
manager = ["notes:read", "payments:approve"]
[users]
"slack:{TEAM}:{ALICE}" = ["writer"]
"slack:{TEAM}:{MARIA}" = ["manager"]
[approvers]
slack = ["{APPROVERS}"]
"""


def run_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    ids = tmp_path / "identities.toml"
    ids.write_text(IDENTITIES)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "MILPA_"))}
    return {
        **env,
        "PYTHONPATH": str(REPO),
        "MILPA_STORE": str(tmp_path / "assistant.db"),
        "MILPA_IDENTITIES": str(ids),
        **extra,
    }


@pytest.mark.parametrize(
    ("missing", "message"),
    [("SLACK_BOT_TOKEN", "SLACK_BOT_TOKEN is not set"), ("SLACK_SIGNING_SECRET", "SLACK_SIGNING_SECRET is not set")],
)
def test_a_missing_secret_is_named_and_nothing_starts(tmp_path: Path, missing: str, message: str) -> None:
    env = run_env(tmp_path, SLACK_BOT_TOKEN=TOKEN, SLACK_SIGNING_SECRET=SECRET)
    del env[missing]
    done = subprocess.run(
        [sys.executable, "-m", "bots.slack_assistant"], env=env, cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr


@asynccontextmanager
async def assistant_process(env: dict[str, str]) -> AsyncIterator[str]:
    """Run the assistant on a free port; yields its events URL; stops it with SIGTERM (it must exit 0)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bots.slack_assistant",
        env=env,
        cwd=REPO,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stderr is not None
    log: list[str] = []
    url = None
    while url is None:
        line = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
        assert line, "the assistant exited before listening:\n" + "".join(log)
        log.append(line)
        found = re.search(r"listening on (http://\S+)", line)
        url = found.group(1) if found else None
    rest = asyncio.create_task(proc.stderr.read())  # keep the pipe drained
    try:
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 30)
        output = "".join(log) + (await rest).decode()
        assert code == 0 and "Traceback" not in output, output


async def test_a_process_restart_between_request_and_approval(tmp_path: Path) -> None:
    async with SlackApiServer(TOKEN, team_id=TEAM, channels={WORK: "work", APPROVERS: "approvers"}) as api:
        env = run_env(
            tmp_path,
            SLACK_BOT_TOKEN=TOKEN,
            SLACK_SIGNING_SECRET=SECRET,
            SLACK_BASE_URL=api.base_url,
            PORT="0",
            HOST="127.0.0.1",
            MILPA_SWEEP_INTERVAL="0.2",
        )
        async with assistant_process(env) as url, SlackEvents(url, SECRET, api=api) as slack:
            request = await slack.command("/milpa", "send_payment ACME 10", user=ALICE, channel=WORK)
            group = await api.wait_for_message(APPROVERS, lambda m: bool(m.buttons()))
            mine = await api.wait_for_message(WORK)
        # a new process on the same SQLite file decides it
        async with assistant_process(env) as url, SlackEvents(url, SECRET, api=api) as slack:
            await slack.send(request.request)  # the first process's request again: already handled
            await slack.click(group, button(group, "Approve")["action_id"], user=MARIA)
            paid = await api.wait_for_message(WORK, lambda m: m.text == "Paid 10.00 EUR to ACME.")
            await api.wait_for(lambda: "Done" in group.text and "Done" in mine.text)
        assert group.buttons() == [] and "u2001" in group.all_text()
        assert api.messages(WORK) == [mine, paid]  # the card and one result: the payment ran once
        assert "Paid 10.00 EUR to ACME" in mine.all_text() and api.messages(APPROVERS) == [group]

"""Answering "n" at ``Confirm? [y/N]`` closes the request in the store: no approval is left pending."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from milpa_chat.store import SqliteStore

ROOT = Path(__file__).resolve().parents[2]


def _cli(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_DATA_HOME": str(tmp_path / "data"), "HOME": str(tmp_path)}
    env.pop("MILPA_STORE", None)
    return subprocess.run(
        [sys.executable, "-m", "milpa_chat.cli", *args],
        cwd=tmp_path,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_no_at_the_prompt_cancels_the_request_through_the_decision_function(tmp_path: Path) -> None:
    store = str(tmp_path / "bot.db")
    asked = _cli(tmp_path, "call", "delete_note", "--args", '{"note_id": 3}', "--store", store, stdin="n\n")
    assert "Cancelled — nothing was done." in asked.stdout and asked.returncode == 1, asked

    listed = _cli(tmp_path, "approvals", "--store", store)
    assert listed.returncode == 0 and "No open approvals." in listed.stdout, listed.stdout

    async def records() -> list[dict[str, object]]:
        opened = SqliteStore(store)
        try:
            return [r.value for r in await opened.scan("approvals")]
        finally:
            await opened.close()

    [approval] = asyncio.run(records())
    assert approval["state"] == "cancelled", approval
    requester = approval["requester"]
    assert isinstance(requester, dict) and requester["principal"] == approval["decided_by"] == "local-shell", approval

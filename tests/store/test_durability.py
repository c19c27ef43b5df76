"""A restart loses nothing that was pending: another process writes, exits abruptly, and a new
store instance in this process reads everything back."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.store._workers import open_spec

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("spec", ["sqlite", "postgres"], indirect=True)
async def test_pending_records_survive_the_writer_process(spec: dict[str, Any]) -> None:
    before = time.time()
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "tests.store._workers", "write-pending", json.dumps(spec)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr

    store = open_spec(spec)
    try:
        pending = await store.scan("approvals", where={"status": "pending"})
        assert [(r.key, r.version) for r in pending] == [("ap-1", 1), ("ap-2", 2)]
        assert pending[0].value == {"status": "pending", "tool": "refund", "amount": 12.5}
        assert pending[1].value["args"] == ["prod", 4]
        assert pending[0].expires_at is not None and pending[0].expires_at > before + 3000
        assert pending[1].expires_at is None

        history = await store.read("history:chat-7")
        assert [(e.seq, e.value) for e in history] == [(i + 1, {"role": "user", "n": i}) for i in range(3)]
        assert (await store.append("history:chat-7", {"role": "bot"})).seq == 4

        assert not (await store.hit("user:7", cost=1, limit=3, window=3600)).allowed

        token = await store.take("tokens", "tok-9")
        assert token is not None and token.value == {"approval": "ap-1", "note": "ñandú ✓"}
        assert await store.take("tokens", "tok-9") is None
    finally:
        await store.close()


@pytest.mark.parametrize("spec", ["sqlite", "postgres"], indirect=True)
async def test_reopening_sees_what_a_closed_instance_wrote(spec: dict[str, Any]) -> None:
    first = open_spec(spec)
    await first.insert("c", "k", {"v": 1})
    await first.close()
    second = open_spec(spec)
    try:
        got = await second.get("c", "k")
        assert got is not None and got.value == {"v": 1}
    finally:
        await second.close()

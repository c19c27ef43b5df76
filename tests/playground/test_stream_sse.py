"""The page's event stream is sse-starlette's ``EventSourceResponse`` (a dependency of the playground extra): a
client that reconnects with ``Last-Event-ID`` gets what came after that event, and idle streams get pings."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from .support import served

ROOT = Path(__file__).resolve().parents[2]


def test_the_playground_extra_names_sse_starlette_with_a_lower_bound() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert any(d.startswith("sse-starlette>=") for d in extras["playground"]), extras["playground"]


async def test_a_reconnect_with_last_event_id_resumes_after_it() -> None:
    async with served() as s:
        await s.ok("/api/telegram/send", {"persona": "alice", "chat": 1001, "text": "/list_notes"})
        await s.until(lambda: any("notes" in (m.text or "") for m in s.play.world.telegram.messages(1001)), "notes")
        await s.play.feed.flush()
        events = (await s.get("/api/feed", since=0))["events"]
        assert len(events) >= 2, events
        got: list[dict[str, Any]] = []
        ids: list[str] = []
        headers = {"Last-Event-ID": str(events[0]["seq"])}
        async with s.session.get(s.url + "/api/stream", headers=headers) as resp:
            assert resp.headers["Content-Type"].startswith("text/event-stream")
            async for line in resp.content:
                if line.startswith(b"id: "):
                    ids.append(line[4:].decode().strip())
                if line.startswith(b"data: "):
                    got.append(json.loads(line[6:]))
                if len(got) == len(events) - 1:
                    break
        assert got == events[1:] and ids == [str(e["seq"]) for e in events[1:]]

"""The playground answers only the page it serves: real HTTP requests (aiohttp) against the whole playground under
uvicorn. A foreign ``Host`` (a page on another name reaching it through DNS rebinding) is refused on every path, a
foreign ``Origin`` on every request that changes something, and a malformed body on every endpoint is 400 naming
what is wrong, never a 500 or an ERROR line in the log."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from .support import served

POSTS = [
    "/api/telegram/send",
    "/api/telegram/tap",
    "/api/slack/send",
    "/api/slack/click",
    "/api/slack/submit",
    "/api/slack/close",
    "/api/clock",
    "/api/tour",
]
GETS = ["/", "/api/state", "/api/feed", "/api/inbox", "/static/app.js"]


def no_errors(caplog: pytest.LogCaptureFixture) -> None:
    loud = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not loud, [f"{r.levelname} {r.name}: {r.getMessage()}" for r in loud]


async def test_a_foreign_host_is_refused_on_every_path_and_the_local_names_are_served() -> None:
    async with served() as s:
        port = s.url.rsplit(":", 1)[1]
        for path in GETS + POSTS:
            for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", "localhost.", ""):
                method = s.session.post if path in POSTS else s.session.get
                async with method(s.url + path, headers={"Host": host}, json={}) as resp:
                    assert resp.status == 421 and "127.0.0.1" in await resp.text(), (path, host, resp.status)
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", f"[::1]:{port}", "LOCALHOST"):
            async with s.session.get(s.url + "/api/state", headers={"Host": host}) as resp:
                assert resp.status == 200, (host, resp.status)
        assert s.play.world.telegram.updates == []  # nothing was delivered on a refused request


async def test_a_foreign_origin_may_not_change_anything() -> None:
    async with served() as s:
        port = s.url.rsplit(":", 1)[1]
        said = {"persona": "alice", "chat": 1001, "text": "/list_notes"}
        for origin in (
            "http://evil.example",
            f"http://evil.example:{port}",
            "null",
            f"http://localhost:{int(port) + 1}",
            f"https://127.0.0.1:{port}.evil.example",
        ):
            for path in POSTS:
                async with s.session.post(s.url + path, json=said, headers={"Origin": origin}) as resp:
                    assert resp.status == 403 and "Origin" in await resp.text(), (path, origin, resp.status)
        assert s.play.world.telegram.updates == []
        async with s.session.get(s.url + "/api/state", headers={"Origin": "http://evil.example"}) as resp:
            assert resp.status == 200  # reading is not changing (and a foreign page cannot read the answer)
        async with s.session.post(s.url + "/api/telegram/send", json=said, headers={"Origin": s.url}) as resp:
            assert resp.status == 200 and (await resp.json())["ok"]  # the page itself


async def test_malformed_bodies_get_400_on_every_endpoint(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    bodies: list[Any] = [
        b"{not json",
        b"\xff\xfe",
        b"",
        b"[1, 2]",
        b"null",
        b'"text"',
        b"1e999",
        {"persona": ["alice"], "chat": 1001, "text": "hi"},
        {"persona": {"key": "alice"}, "chat": 1001, "text": "hi", "id": 1, "data": "x", "channel": "C1", "ts": "1"},
        {"persona": "alice", "chat": 10**30, "text": "hi", "id": 10**30, "data": "page:1"},
        {"persona": "alice", "chat": 1001, "id": "one", "data": ["x"], "text": 5},
        {"persona": "alice", "channel": 5, "ts": None, "action_id": {}, "value": 3, "text": None},
        {"persona": "alice", "view": 5, "values": {"a": 1}},
        {"persona": "alice", "view": "V404", "values": {}},
        {"advance": "soon"},
        {"advance": float("inf")},
        {"advance": -(10**20)},
    ]
    async with served() as s:
        for path in POSTS:
            for body in bodies:
                if path == "/api/tour" and not isinstance(body, bytes):
                    continue  # a JSON object starts the tour
                raw = body if isinstance(body, bytes) else None
                kwargs: dict[str, Any] = {"data": raw} if raw is not None else {"json": body}
                headers = {"Content-Type": "application/json"}
                async with s.session.post(s.url + path, headers=headers, **kwargs) as resp:
                    text = await resp.text()
                    assert resp.status == 400, (path, body, resp.status, text)
                    assert (await resp.json())["error"], (path, body, text)
        for query in ("since=abc", "since=1e3", "wait=soon", "since=-5&wait=nan"):
            async with s.session.get(f"{s.url}/api/feed?{query}") as resp:
                assert resp.status == 400 and (await resp.json())["error"], (query, resp.status)
        no_errors(caplog)

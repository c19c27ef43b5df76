"""The tour played on the page goes at a person's pace (each step held 2-4 s, by the length of what it shows),
"Next step" (the tour button while it plays) skips ahead, and the page has a favicon (no 404 on every load)."""

from __future__ import annotations

import asyncio
import re
import time

from milpa_chat.playground.tour import Pace

from .support import served

STEP = re.compile(r"^ok +(\d+\. .*?) \((\d+\.\d) s\): (.*)$")
#: Held this long, a step that was not skipped would outlast the test many times over.
AN_HOUR = 3600.0
#: Seconds after which the skipping is a hang (skipping the ten steps takes a few seconds).
HANG = 300.0


async def _tour_lines(s: object, seen: int) -> list[str]:
    events = await s.get("/api/feed", since=0)  # type: ignore[attr-defined]
    return [e["text"] for e in events["events"] if e["type"] == "tour.step"][seen:]


def test_a_step_is_held_between_two_and_four_seconds_by_the_length_of_its_text() -> None:
    pace = Pace()
    assert pace.reading_time("") == 2.0 and pace.reading_time("x" * 60) == 3.0 and pace.reading_time("x" * 900) == 4.0


async def test_played_on_the_page_each_step_is_readable_and_next_step_skips_ahead() -> None:
    async with served() as s:
        await s.ok("/api/tour", {})
        lines: list[str] = []
        while len(lines) < 2:
            await asyncio.sleep(0.2)
            lines = await _tour_lines(s, 0)
        for line in lines[:2]:  # each held at least its reading time (shown to a tenth), never 0.0-0.3 s
            found = STEP.match(line)
            assert found is not None, line
            title, held, detail = found.group(1), float(found.group(2)), found.group(3)
            assert held + 0.05 >= Pace().reading_time(f"{title}: {detail}") >= 2.0, lines

        # from here on a step that is not skipped is held for an hour: the tour can only end by skipping
        s.play.pace.least = s.play.pace.most = AN_HOUR
        started, presses = time.monotonic(), 0
        async with asyncio.timeout(HANG):
            while not any(line.endswith("steps passed") for line in lines):  # a person pressing "Next step"
                skipped = await s.ok("/api/tour", {})
                presses += 1
                assert skipped.get("skipped"), "the tour ended between two presses"
                await asyncio.sleep(0.05)
                lines = await _tour_lines(s, 0)
        assert lines[-1] == "12 of 12 steps passed", lines
        print(f"\nthe last {len(lines) - 3} steps skipped in {time.monotonic() - started:.1f} s ({presses} presses)")


async def test_the_page_has_a_favicon() -> None:
    async with served() as s:
        async with s.session.get(s.url + "/favicon.ico") as resp:
            assert resp.status == 200 and resp.content_type == "image/svg+xml" and b"<svg" in await resp.read()
        async with s.session.get(s.url + "/") as resp:
            assert 'rel="icon" href="/static/favicon.svg"' in await resp.text()

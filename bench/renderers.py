"""Renderer benchmark: time to turn big results into each channel's payload.

Rows: a 1 MB result given as one string, a 1 MB result given as ~7,300 records (each with a
secret to redact), and a 1,000-item paginated page. Columns: one per channel, median
milliseconds. The first table times ``render()`` (composition, redaction, escaping,
splitting: the payload to send); the second adds building ``payload.document``, the
redacted full-content file attached when something was shortened (built on first access).
A last row gives µs per ``render()`` of a 10-item page: what one page tap renders.
Target: ≤ 50 ms for a 1 MB result on every channel.

    .venv/bin/python bench/renderers.py [--repeat 21]   # with milpa_chat installed (or PYTHONPATH=.)
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from milpa_chat.renderers import (
    CliRenderer,
    JsonRenderer,
    JupyterRenderer,
    SlackRenderer,
    TelegramRenderer,
    WebRenderer,
)
from milpa_chat.runtime.result import ToolResult

CHANNELS: dict[str, Any] = {
    "telegram": TelegramRenderer(),
    "slack": SlackRenderer(),
    "jupyter": JupyterRenderer(),
    "cli": CliRenderer(),
    "web": WebRenderer(),
    "json": JsonRenderer(),
}


def one_mb_text() -> ToolResult:
    line = "2026-08-15 14:08:11 INFO request <GET /notes?page=2&q=milk> took 12 ms ✓\n"
    return ToolResult.success((line * (1_048_576 // len(line.encode()) + 1))[:1_048_576], "Log tail")


def one_mb_records() -> ToolResult:
    records = []
    size, i = 0, 0
    while size < 1_048_576:
        record = {
            "id": i,
            "title": f"Note {i} <draft> & more",
            "tags": ["home", "urgent"],
            "done": i % 2 == 0,
            "owner": {"name": "Ana", "api_key": "sk-live-123"},
        }
        records.append(record)
        size += len(json.dumps(record))
        i += 1
    return ToolResult.success(records, f"{len(records):,} notes")


def page_of_1000() -> ToolResult:
    items = [{"id": i, "title": f"Note {i}", "done": i % 3 == 0} for i in range(1000)]
    return ToolResult.paginated(items, 2, 25_000, 1000, "Notes", {"ref": "ls_4f2a"})


def page_of_10() -> ToolResult:
    items = [{"id": i, "title": f"note {i}"} for i in range(11, 21)]
    return ToolResult.paginated(items, 2, 50, 10, "Notes", {"ref": "ls_4f2a"})


def small_page_us(repeat: int) -> None:
    """µs per render of a 10-item page (best of ``repeat`` batches of 200: a batch is too short for a
    median of single runs to mean anything)."""
    result = page_of_10()
    names = list(CHANNELS)
    print("\n10-item page (one page tap): µs per render(), best batch of 200")
    print(f"{'result':<18}" + "".join(f"{n:>10}" for n in names))
    print("-" * (18 + 10 * len(names)))
    cells = []
    for name in names:
        renderer = CHANNELS[name]
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(200):
                renderer.render(result)
            best = min(best, (time.perf_counter() - start) / 200 * 1e6)
        cells.append(best)
    print(f"{'10-item page':<18}" + "".join(f"{c:>10.0f}" for c in cells))


def median_ms(render: Callable[[], object], repeat: int) -> float:
    render()  # warm up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        render()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def render_and_attach(renderer: Any, result: ToolResult) -> object:
    """Render, then build the attached full-content document the way an adapter would send it."""
    payload = renderer.render(result)
    return getattr(payload, "document", None)


def table(title: str, cases: dict[str, ToolResult], run: Callable[[Any, ToolResult], object], repeat: int) -> None:
    names = list(CHANNELS)
    print(f"\n{title}")
    print(f"{'result':<18}" + "".join(f"{n:>10}" for n in names))
    print("-" * (18 + 10 * len(names)))
    for case, result in cases.items():
        cells = [median_ms(lambda r=CHANNELS[n], x=result: run(r, x), repeat) for n in names]
        print(f"{case:<18}" + "".join(f"{c:>10.2f}" for c in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=21, help="timed runs per cell (median reported)")
    args = parser.parse_args()
    cases = {"1 MB text": one_mb_text(), "1 MB records": one_mb_records(), "1,000-item page": page_of_1000()}
    print(f"renderers: median ms over {args.repeat} runs (target ≤ 50 ms for 1 MB)")
    table("render() — the payload to send", cases, lambda r, x: r.render(x), args.repeat)
    table("render() + payload.document — with the full-content file built", cases, render_and_attach, args.repeat)
    small_page_us(args.repeat)


if __name__ == "__main__":
    main()

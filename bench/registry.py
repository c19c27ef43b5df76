"""µs per tool call through milpa-chat's pipeline against a bare call, pydantic and peer tool runtimes.

Run: ``make bench`` (installs the ``bench`` extra: langchain-core, mcp, pydantic-ai-slim) or
``python bench/registry.py [--n 20000]``. Every row is measured in this one run on this machine;
the ratio column is against the bare call of the same tool.

Rows: a trivial ``add(a: int, b: int)`` and ``search_notes(query, page 1..1000 clamped, tags)``,
valid and invalid input, async and sync tools:

* bare call (the function itself, awaited for async); a ``def`` tool by default (it runs on a worker
  thread) and declared ``blocking=False`` (it runs on the event loop, no thread hop);
* pydantic ``validate_call`` (validation + call, no pipeline);
* ``registry.call`` with a MemoryStore and a SqliteStore (audit on: the stdlib logger at its
  default level, as in production, every warning line formatted and written to the null device by a
  stock ``logging.FileHandler``; no rate limiter), and the refused call when no logging is set up (only the library's
  ``NullHandler``: no record is built);
* langchain-core ``StructuredTool.invoke`` / ``ainvoke``;
* the MCP SDK's ``MCPServer.call_tool``. Its "add invalid" row is the same refusal (the same arguments fail
  the same pydantic validation) but not the same work: the SDK raises ``ToolError`` with pydantic's text (the
  bench catches it) and writes no log line, where ``registry.call`` returns a ``VALIDATION_ERROR`` result with
  every error's path and message, and writes its audit line (the last line of output counts the lines each
  writes per refused call);
* pydantic-ai tool execution (``function_schema.validator`` + ``function_schema.call``).

Also: ``import milpa_chat`` time in a fresh interpreter (target ≤ 150 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pydantic import validate_call

from milpa_chat import Param, ToolContext, ToolRegistry, tool
from milpa_chat.store import MemoryStore

Row = tuple[str, str, float, float]  # tool/case, runner, median µs, p99 µs


# ---------------------------------------------------------------------------- the tools
async def add(a: int, b: int) -> int:
    return a + b


def add_sync(a: int, b: int) -> int:
    return a + b


def add_on_loop(a: int, b: int) -> int:  # the same, declared blocking=False: it runs on the event loop
    return a + b


async def search_notes(
    query: str, page: Annotated[int, Param("Page", clamp=(1, 1000))] = 1, tags: list[str] | None = None
) -> dict[str, Any]:
    return {"query": query, "page": page, "tags": tags}


VALID_ADD = {"a": 1, "b": 2}
INVALID_ADD = {"a": "one", "b": 2}
VALID_SEARCH = {"query": "milk", "page": 2000, "tags": ["home", "food"]}
INVALID_SEARCH = {"query": 5, "page": "x", "tags": "home"}


# ---------------------------------------------------------------------------- timing
def _stats(samples: list[int]) -> tuple[float, float]:
    samples.sort()
    return statistics.median(samples) / 1000, samples[int(len(samples) * 0.99) - 1] / 1000


async def time_async(fn: Callable[[], Awaitable[Any]], n: int) -> tuple[float, float]:
    for _ in range(min(n, 2000)):
        try:  # noqa: SIM105 - a context manager here would add its own cost to every sample
            await fn()
        except Exception:
            pass
    samples: list[int] = []
    clock = time.perf_counter_ns
    for _ in range(n):
        t0 = clock()
        try:  # noqa: SIM105 - a context manager here would add its own cost to every sample
            await fn()
        except Exception:
            pass
        samples.append(clock() - t0)
    return _stats(samples)


def time_sync(fn: Callable[[], Any], n: int) -> tuple[float, float]:
    for _ in range(min(n, 2000)):
        try:  # noqa: SIM105 - a context manager here would add its own cost to every sample
            fn()
        except Exception:
            pass
    samples: list[int] = []
    clock = time.perf_counter_ns
    for _ in range(n):
        t0 = clock()
        try:  # noqa: SIM105 - a context manager here would add its own cost to every sample
            fn()
        except Exception:
            pass
        samples.append(clock() - t0)
    return _stats(samples)


# ---------------------------------------------------------------------------- runners
def milpa_registry(store: Any) -> ToolRegistry:
    reg = ToolRegistry(store=store)
    reg.scan(tool("add", "Add two numbers", mutating=False)(add))
    reg.scan(tool("add_sync", "Add two numbers (sync)", mutating=False)(add_sync))
    reg.scan(tool("add_on_loop", "Add two numbers (sync, on the loop)", mutating=False, blocking=False)(add_on_loop))
    reg.scan(tool("search_notes", "Search notes", mutating=False)(search_notes))
    return reg


async def bench_milpa(n: int, store: Any, label: str) -> list[Row]:
    reg = milpa_registry(store)
    ctx = ToolContext.cli()
    rows: list[Row] = []
    for case, name, args in (
        ("add valid (async)", "add", VALID_ADD),
        ("add invalid (async)", "add", INVALID_ADD),
        ("add valid (sync tool)", "add_sync", VALID_ADD),
        ("add valid (sync tool, blocking=False)", "add_on_loop", VALID_ADD),
        ("search valid (async)", "search_notes", VALID_SEARCH),
        ("search invalid (async)", "search_notes", INVALID_SEARCH),
    ):
        result = await reg.call(name, args, ctx)
        assert result.success == ("invalid" not in case), (case, result)
        count = n // 10 if case == "add valid (sync tool)" else n
        rows.append((case, label, *await time_async(lambda name=name, args=args: reg.call(name, args, ctx), count)))
    return rows


async def bench_milpa_unconfigured(n: int) -> list[Row]:
    """The refused call when the host configured no logging: only the library's NullHandler listens,
    so no audit record is built at all."""
    logger = logging.getLogger("milpa_chat")
    saved = logger.handlers[:]
    logger.handlers = [logging.NullHandler()]
    try:
        reg = milpa_registry(MemoryStore())
        ctx = ToolContext.cli()
        label = "milpa registry.call (no logging set up)"
        return [("add invalid (async)", label, *await time_async(lambda: reg.call("add", INVALID_ADD, ctx), n))]
    finally:
        logger.handlers = saved


async def bench_bare(n: int) -> list[Row]:
    return [
        ("add valid (async)", "bare call", *await time_async(lambda: add(**VALID_ADD), n)),
        ("add valid (sync tool)", "bare call", *time_sync(lambda: add_sync(**VALID_ADD), n)),
        ("add valid (sync tool, blocking=False)", "bare call", *time_sync(lambda: add_on_loop(**VALID_ADD), n)),
        ("search valid (async)", "bare call", *await time_async(lambda: search_notes(**VALID_SEARCH), n)),
    ]


async def bench_pydantic(n: int) -> list[Row]:
    v_add = validate_call(add)
    v_add_sync = validate_call(add_sync)
    v_search = validate_call(search_notes)
    return [
        ("add valid (async)", "pydantic validate_call", *await time_async(lambda: v_add(**VALID_ADD), n)),
        ("add invalid (async)", "pydantic validate_call", *await time_async(lambda: v_add(**INVALID_ADD), n)),
        ("add valid (sync tool)", "pydantic validate_call", *time_sync(lambda: v_add_sync(**VALID_ADD), n)),
        ("search valid (async)", "pydantic validate_call", *await time_async(lambda: v_search(**VALID_SEARCH), n)),
    ]


async def bench_langchain(n: int) -> list[Row]:
    try:
        from langchain_core.tools import StructuredTool
    except ImportError:
        return []
    t_add = StructuredTool.from_function(coroutine=add, name="add", description="Add")
    t_sync = StructuredTool.from_function(func=add_sync, name="add_sync", description="Add")
    label = "langchain-core ainvoke"
    return [
        ("add valid (async)", label, *await time_async(lambda: t_add.ainvoke(VALID_ADD), n // 4)),
        ("add invalid (async)", label, *await time_async(lambda: t_add.ainvoke(INVALID_ADD), n // 4)),
        ("add valid (sync tool)", "langchain-core invoke", *time_sync(lambda: t_sync.invoke(VALID_ADD), n // 4)),
    ]


async def bench_mcp(n: int) -> list[Row]:
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError:
        return []
    server = MCPServer("bench")
    server.tool()(add)
    server.tool()(add_sync)
    return [
        (
            "add valid (async)",
            "mcp MCPServer.call_tool",
            *await time_async(lambda: server.call_tool("add", VALID_ADD), n // 4),
        ),
        (
            "add invalid (async)",
            "mcp MCPServer.call_tool",
            *await time_async(lambda: server.call_tool("add", INVALID_ADD), n // 4),
        ),
        (
            "add valid (sync tool)",
            "mcp MCPServer.call_tool",
            *await time_async(lambda: server.call_tool("add_sync", VALID_ADD), n // 40),
        ),
    ]


async def bench_pydantic_ai(n: int) -> list[Row]:
    """pydantic-ai's per-call path in an agent run (``ToolManager.handle_call``), and, as a lower
    bound that is not a peer runtime, its bare ``function_schema`` validator + call."""
    try:
        from pydantic_ai import RunContext, Tool
        from pydantic_ai.messages import ToolCallPart
        from pydantic_ai.models.test import TestModel
        from pydantic_ai.tool_manager import ToolManager
        from pydantic_ai.toolsets import FunctionToolset
        from pydantic_ai.usage import RunUsage
    except ImportError:
        return []
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    manager = await ToolManager(toolset=FunctionToolset([add, add_sync])).for_run_step(ctx)
    schema = Tool(add, takes_ctx=False).function_schema

    def handle(name: str, args: dict[str, Any]) -> Awaitable[Any]:
        return manager.handle_call(ToolCallPart(tool_name=name, args=args))

    async def bare_schema(args: dict[str, Any]) -> Any:
        return await schema.call(schema.validator.validate_python(args), ctx)

    label = "pydantic-ai ToolManager.handle_call"
    return [
        ("add valid (async)", label, *await time_async(lambda: handle("add", VALID_ADD), n // 4)),
        ("add invalid (async)", label, *await time_async(lambda: handle("add", INVALID_ADD), n // 4)),
        ("add valid (sync tool)", label, *await time_async(lambda: handle("add_sync", VALID_ADD), n // 40)),
        ("add valid (async)", SCHEMA_ONLY, *await time_async(lambda: bare_schema(VALID_ADD), n)),
        ("add invalid (async)", SCHEMA_ONLY, *await time_async(lambda: bare_schema(INVALID_ADD), n)),
    ]


SCHEMA_ONLY = "(pydantic-ai function_schema only)"


def import_time(samples: int = 5) -> tuple[float, float]:
    code = "import time; t=time.perf_counter(); import milpa_chat; print((time.perf_counter()-t)*1000)"
    root = str(Path(__file__).resolve().parent.parent)
    times = [float(subprocess.check_output([sys.executable, "-c", code], cwd=root, text=True)) for _ in range(samples)]
    return min(times), statistics.median(times)


# ---------------------------------------------------------------------------- report
def print_table(rows: list[Row]) -> None:
    bare = {case: med for case, runner, med, _ in rows if runner == "bare call"}
    cases = list(dict.fromkeys(r[0] for r in rows))
    print(f"{'case':<26} {'runner':<38} {'median µs':>10} {'p99 µs':>9} {'× bare':>8}")
    print("-" * 96)
    for case in cases:
        base = bare.get(case) or bare.get(case.replace("invalid", "valid"))
        for c, runner, med, p99 in sorted((r for r in rows if r[0] == case), key=lambda r: r[2]):
            ratio = f"{med / base:8.1f}" if base else "       -"
            print(f"{c:<26} {runner:<38} {med:>10.2f} {p99:>9.2f} {ratio}")
        print()


class CountingFileHandler(logging.FileHandler):
    """Formats and writes every line (to the null device) and counts them."""

    lines = 0

    def emit(self, record: logging.LogRecord) -> None:
        CountingFileHandler.lines += 1
        super().emit(record)


async def lines_per_refusal(n: int = 200) -> dict[str, float]:
    """How many log lines each runtime writes for one refused call: the error-path rows compare a
    runtime that writes its audit line with peers that may write none."""
    found: dict[str, float] = {}

    async def count(label: str, fn: Callable[[], Awaitable[Any]]) -> None:
        before = CountingFileHandler.lines
        for _ in range(n):
            try:  # noqa: SIM105
                await fn()
            except Exception:
                pass
        found[label] = (CountingFileHandler.lines - before) / n

    reg, ctx = milpa_registry(MemoryStore()), ToolContext.cli()
    await count("milpa registry.call", lambda: reg.call("add", INVALID_ADD, ctx))
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError:
        return found
    server = MCPServer("bench")
    server.tool()(add)
    await count("mcp MCPServer.call_tool", lambda: server.call_tool("add", INVALID_ADD))
    return found


LOGGERS = ("milpa_chat", "mcp", "langchain_core", "pydantic_ai")


def quiet_audit(handler: logging.Handler | None = None) -> logging.Handler:
    """Audit stays on and every line is formatted, but written to the null device, not the terminal: a
    stock ``FileHandler`` while timing (a counting one while counting lines, :func:`lines_per_refusal`)."""
    handler = handler or logging.FileHandler(os.devnull)
    for name in LOGGERS:
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.propagate = False
    return handler


def unquiet(handler: logging.Handler) -> None:
    for name in LOGGERS:
        logging.getLogger(name).removeHandler(handler)
    handler.close()


async def main(n: int) -> None:
    quiet = quiet_audit()
    rows: list[Row] = []
    rows += await bench_bare(n)
    rows += await bench_pydantic(n)
    rows += await bench_milpa(n, MemoryStore(), "milpa registry.call (memory)")
    rows += await bench_milpa_unconfigured(n)
    with tempfile.TemporaryDirectory() as tmp:
        from milpa_chat.store.sqlite import SqliteStore

        store = SqliteStore(str(Path(tmp) / "bench.db"))
        rows += await bench_milpa(n, store, "milpa registry.call (sqlite)")
        await store.close()
    rows += await bench_langchain(n)
    rows += await bench_mcp(n)
    rows += await bench_pydantic_ai(n)
    print(f"Python {sys.version.split()[0]}, n={n} calls per row (sync-tool rows through threads use fewer)\n")
    print_table(rows)
    lo, med = import_time()
    print(f"import milpa_chat: min {lo:.1f} ms, median {med:.1f} ms (fresh interpreter, 5 runs)")
    milpa = {r[0]: r[2] for r in rows if r[1] == "milpa registry.call (memory)"}
    for case in ("add valid (async)", "add invalid (async)"):
        peers = {
            r[1]: r[2]
            for r in rows
            if r[0] == case
            and r[1] not in ("bare call", "pydantic validate_call", SCHEMA_ONLY)
            and not r[1].startswith("milpa")
        }
        if peers:
            name = min(peers, key=peers.__getitem__)
            print(
                f"{case}: fastest peer runtime {name} {peers[name]:.2f} µs; milpa registry.call "
                f"{milpa[case]:.2f} µs ({peers[name] / milpa[case]:.1f}× faster)"
            )
    unquiet(quiet)
    counting = quiet_audit(CountingFileHandler(os.devnull))
    lines = await lines_per_refusal()
    unquiet(counting)
    print("log lines written per refused call: " + ", ".join(f"{k} {v:.2f}" for k, v in lines.items()))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20000, help="calls per row")
    asyncio.run(main(parser.parse_args().n))

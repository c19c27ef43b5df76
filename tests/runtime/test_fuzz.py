"""No exception escapes ``ToolRegistry.call`` or ``Assistant.handle``, for hostile input and failing stores.

Seeded (``MILPA_FUZZ_SEED`` to replay another run): over 5,000 generated payloads against typed
``@tool`` tools and a hand-registered JSON-schema tool, with a store that fails on chosen calls
(``StoreError`` and ``OSError``) and a locked SQLite file; then chat events through an Assistant.
Every call must come back as a result: one that does not within 30 s (a hang) counts as an escaped exception.
The test prints the counts and the worst time (a figure of the machine, not asserted).
"""

from __future__ import annotations

import asyncio
import enum
import functools
import json
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel

from milpa_chat import Param, ToolContext, ToolRegistry, ToolResult, VerifyPolicy, tool
from milpa_chat.chat import Assistant, ChatUser, Identities
from milpa_chat.store import MemoryStore, SqliteStore
from milpa_chat.testing.transport import RecordingTransport

from ._hostile import WEIRD_KEYS, FailingStore, Hostile, describe

SEED = int(os.environ.get("MILPA_FUZZ_SEED", "1100"))
PAYLOADS = 5_000


class Person(BaseModel):
    name: str
    age: int


class Mode(enum.Enum):
    FAST = "fast"
    SLOW = "slow"


class FuzzTools:
    @tool("search", "Search notes", mutating=False)
    async def search(
        self, query: str, page: Annotated[int, Param("Page", clamp=(1, 1000))] = 1, tags: list[str] | None = None
    ) -> dict[str, Any]:
        return {"query": query, "page": page, "tags": tags}

    @tool("store_blob", "Store a blob", mutating=True, confirm=True)
    def store_blob(self, blob: dict[str, Any]) -> dict[str, Any]:
        return {"keys": len(blob)}

    @tool("add_person", "Add a person", mutating=True)
    async def add_person(
        self, person: Person, mode: Mode = Mode.FAST, colour: Literal["red", "green"] = "red"
    ) -> dict[str, Any]:
        return {"name": person.name, "mode": mode.value, "colour": colour}

    @tool("pay", "Pay an amount", mutating=True, verify=VerifyPolicy(approver_scopes=("pay:approve",)))
    async def pay(self, amount: float, note_id: int = 0) -> dict[str, Any]:
        return {"paid": amount}


FIELDS = {
    "search": ["query", "page", "tags"],
    "store_blob": ["blob"],
    "add_person": ["person", "mode", "colour"],
    "pay": ["amount", "note_id"],
    "bulk": ["items", "note_id"],
}
BULK_SCHEMA = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": {"type": "object"}}, "note_id": {"type": "integer"}},
    "required": ["items"],
}


def build(store: Any) -> ToolRegistry:
    registry = ToolRegistry(store=store)
    registry.scan(FuzzTools())
    registry.register("bulk", "Bulk import", BULK_SCHEMA, lambda args, ctx: {"n": len(args["items"])}, mutating=True)
    return registry


CONTEXTS = [
    ToolContext.cli(),
    ToolContext.mcp("r-1", "agent:a", ["*"]),
    ToolContext(principal="telegram:7", channel="telegram", scopes=("*",)),
    ToolContext(principal=None, channel="web"),
]


class Tally:
    def __init__(self) -> None:
        self.calls = 0
        self.escaped: list[str] = []
        self.worst = 0.0
        self.worst_what = ""

    async def run(self, what: Callable[[], str], coro: Any) -> Any:
        self.calls += 1
        t0 = time.perf_counter()
        try:
            out = await asyncio.wait_for(coro, timeout=30)
        except Exception as exc:  # the thing under test: nothing may land here
            self.escaped.append(f"{what()}: {type(exc).__name__}: {describe(exc)[:200]}")
            out = None
        took = time.perf_counter() - t0
        if took > self.worst:
            self.worst, self.worst_what = took, what()
        return out


async def fuzz_registry(
    registry: ToolRegistry, gen: Hostile, n: int, tally: Tally, flaky: FailingStore | None = None
) -> None:
    names = [*FIELDS, "nope"]
    for i in range(n):
        if flaky is not None and i % 50 == 0:
            flaky.fail(gen.r.choice([0, 1, 2, 3, 7]), gen.r.choice(_faults(OSError, RuntimeError, _store_error)))
        name: Any = gen.r.choice(names) if gen.r.random() > 0.02 else gen.r.choice([*WEIRD_KEYS, [1]])
        if flaky is not None and gen.r.random() < 0.6:  # calls that reach the store
            name = gen.r.choice(["store_blob", "pay", "bulk"])
            args: Any = {k: gen.plausible(k) for k in FIELDS[name]}
            if gen.r.random() < 0.3:
                args["confirm_token"] = gen.r.choice(["tok", "\ud800", 5, None, "a" * 300])
        else:
            args = gen.args(FIELDS.get(name, ["x"]) if isinstance(name, str) else ["x"])
        ctx = gen.r.choice(CONTEXTS)
        result = await tally.run(functools.partial(_said, "call({}, {})", name, args), registry.call(name, args, ctx))
        if result is not None:
            assert isinstance(result, ToolResult)
            json.dumps(result.to_dict(), default=str)  # every result can be sent back to a caller


def _faults(*kinds: Callable[[str], BaseException]) -> list[Callable[[str], BaseException]]:
    return list(kinds)


def _said(template: str, *values: Any) -> str:
    """``template`` with each value described; built only when a call escaped (passed as a ``functools.partial``)."""
    return template.format(*map(describe, values))


def _store_error(text: str) -> Exception:
    from milpa_chat.errors import StoreError

    return StoreError(text)


async def fuzz_assistant(gen: Hostile, n: int, tally: Tally) -> int:
    flaky = FailingStore(MemoryStore())
    registry = build(flaky)
    assistant = Assistant(registry, Identities(default_scopes=["*"]))
    surface = RecordingTransport("telegram")
    assistant.attach(surface)
    users = [ChatUser("1", "Ana"), ChatUser("2", "Ben")]
    for i in range(n):
        if i % 40 == 0:
            flaky.fail(gen.r.choice([0, 0, 1, 2, 5]), gen.r.choice(_faults(OSError, _store_error)))
        user = gen.r.choice(users)
        pick = gen.r.random()
        if pick < 0.5:
            name = gen.r.choice([*FIELDS, "tools", "help", "nope"])
            text = f"/{name} " + gen.r.choice(
                [
                    json.dumps(_jsonable(gen.value()), default=str)[:5000],
                    "query=milk page=3",
                    'x="unclosed',
                    "\ud800",
                    "5",
                ]
            )
            inbound = surface.inbound(user, user.id, text=text)
        else:
            cards = [m for msgs in surface.messages.values() for m in msgs if m.buttons]
            if cards and pick < 0.85:
                card = gen.r.choice(cards)
                button = gen.r.choice(card.buttons)
                inbound = surface.inbound(
                    user, card.chat_id, action=button.action, ref=button.ref, message_id=card.message_id
                )
            else:
                inbound = surface.inbound(
                    user,
                    user.id,
                    action=gen.r.choice(["confirm", "approve", "page", "x"]),
                    ref=gen.r.choice(["", "\ud800", "a" * 500, "abc"]),
                    message_id="1",
                )
        what = inbound.text or inbound.action
        await tally.run(functools.partial(_said, "handle({})", what), assistant.handle(inbound, surface))
    return flaky.raised


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value, allow_nan=False)
    except Exception:
        return {"v": "x"}
    return value


async def fuzz_locked_sqlite(path: Path, gen: Hostile, n: int, tally: Tally) -> None:
    store = SqliteStore(path, busy_timeout=0.05)
    registry = build(store)
    lock = sqlite3.connect(path, isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        for _ in range(n):
            name = gen.r.choice(["store_blob", "pay", "search"])
            args: dict[str, Any] = (
                {"blob": {"a": 1}} if name == "store_blob" else {"amount": 1.0} if name == "pay" else {"query": "q"}
            )
            if gen.r.random() < 0.3:
                args["confirm_token"] = "tok-" + str(gen.r.random())
            call = registry.call(name, args, gen.r.choice(CONTEXTS[:3]))
            result = await tally.run(functools.partial("locked call({})".format, name), call)
            if name != "search" and "confirm_token" not in args and result is not None:
                assert not result.success and "try again" in (result.error or ""), result
    finally:
        lock.execute("ROLLBACK")
        lock.close()
        await store.close()


async def test_no_exception_escapes_for_hostile_payloads_and_failing_stores(tmp_path: Path) -> None:
    gen = Hostile(SEED)
    tally = Tally()
    t0 = time.perf_counter()
    await fuzz_registry(build(MemoryStore()), gen, PAYLOADS, tally)
    t1 = time.perf_counter()
    flaky = FailingStore(MemoryStore())
    await fuzz_registry(build(flaky), gen, 1_500, tally, flaky)
    t2 = time.perf_counter()
    await fuzz_locked_sqlite(tmp_path / "locked.db", gen, 60, tally)
    t3 = time.perf_counter()
    store_failures = flaky.raised + await fuzz_assistant(gen, 800, tally)
    took = f"{t1 - t0:.1f} s, {t2 - t1:.1f} s, {t3 - t2:.1f} s, {time.perf_counter() - t3:.1f} s"
    print(
        f"\nfuzz (seed {SEED}): {tally.calls} calls, {store_failures} injected store failures, "
        f"{len(tally.escaped)} exceptions escaped, worst {tally.worst * 1000:.1f} ms ({tally.worst_what[:120]}); "
        f"phases (payloads, failing store, locked SQLite, assistant): {took}"
    )
    assert tally.escaped == [], "\n".join(tally.escaped[:20])
    assert flaky.raised > 100 and store_failures > 200


async def test_a_store_outage_is_told_in_the_chat_and_logged_once(caplog: Any) -> None:
    flaky = FailingStore(MemoryStore())
    assistant = Assistant(build(flaky), Identities(default_scopes=["*"]))
    surface = RecordingTransport("telegram")
    ana = ChatUser("1", "Ana")
    flaky.fail(1, OSError)
    with caplog.at_level("ERROR", logger="milpa_chat.chat"):
        await surface.say(assistant, ana, '/store_blob {"blob": {"a": 1}}')
    assert "nothing was run" in surface.last("1").text and "try again" in surface.last("1").text
    lines = [r for r in caplog.records if r.name == "milpa_chat.chat"]
    assert len(lines) == 1 and "OSError" in lines[0].getMessage() and lines[0].exc_info is not None
    flaky.fail(0)
    await surface.say(assistant, ana, '/store_blob {"blob": {"a": 1}}')
    labels = " ".join(b.label for b in surface.last("1").buttons)
    assert "Confirm" in labels and "Cancel" in labels  # the store is back: the call asks for confirmation
    with pytest.raises(LookupError, match="no transport attached"):
        await assistant.handle(surface.inbound(ana, "1", text="/help").__class__("nowhere", "1", ana, text="/x"))


async def test_names_and_tokens_of_the_wrong_type_are_answered() -> None:
    registry = build(MemoryStore())
    unhashable = await registry.call([1], {})  # type: ignore[arg-type]
    assert unhashable.code == "TOOL_NOT_FOUND" and "strings" in (unhashable.error or "")
    token = await registry.call("store_blob", {"blob": {}, "confirm_token": {"a": 1}})
    assert token.code == "VALIDATION_ERROR" and "confirmation token" in (token.error or "")
    vid = await registry.call("pay", {"amount": 1.0, "verification_id": 7})
    assert vid.code == "FORBIDDEN" and "Unknown verification request" in (vid.error or "")
    func = await registry.call("store_blob", {"blob": {"f": len}})
    assert func.code == "VALIDATION_ERROR" and "builtin_function_or_method" in (func.error or "")


async def test_a_store_that_fails_after_the_tool_ran_keeps_the_tools_result() -> None:
    flaky = FailingStore(MemoryStore())
    registry = ToolRegistry(store=flaky)
    ran: list[int] = []

    def send(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        ran.append(args["n"])
        flaky.fail(1, _store_error)  # the write that settles the approval will fail
        return {"sent": args["n"]}

    registry.register(
        "send", "Send", {"type": "object", "properties": {"n": {"type": "integer"}}}, send, mutating=True, confirm=True
    )
    token = (await registry.call("send", {"n": 3})).confirm_token
    result = await registry.call("send", {"confirm_token": token})
    assert ran == [3] and result.success and result.data == {"sent": 3}
    assert result.meta["approval_settled"] is False  # not "nothing was run": it ran

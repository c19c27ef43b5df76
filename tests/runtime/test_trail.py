"""The hash-chained audit trail: the story of an approval, concurrent appends, and tampering found where it is."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from milpa_chat.runtime.trail import COLLECTION, AuditTrail
from milpa_chat.store import Store
from tests.runtime._approval_worker import APPROVERS, MANAGERS, build, clerk_context
from tests.runtime.conftest import backend_spec
from tests.store._workers import open_spec


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    yield from backend_spec(request.param, tmp_path)


async def a_story(store: Store) -> tuple[AuditTrail, str]:
    """Alice asks to pay (with a secret in the arguments), Maria approves on Telegram, it runs."""
    registry, assistant, surface = build(store)
    trail = AuditTrail(store).attach(registry)
    opened = await registry.call("pay", {"to": "ACME password=hunter2", "amount": 8}, clerk_context(assistant))
    rid = opened.data["request_id"]
    await assistant.open_approval(surface.inbound(MANAGERS[0], APPROVERS), "pay", opened)
    from milpa_chat.chat import Inbound

    await assistant.handle(Inbound("telegram", APPROVERS, MANAGERS[0], action="approve", ref=rid), surface)
    return trail, rid


async def test_the_trail_tells_the_story_of_an_approval(spec: dict[str, Any]) -> None:
    store = open_spec(spec)
    trail, rid = await a_story(store)
    story = await trail.story(rid)
    kinds = [e.kind for e in story]
    assert kinds[0] == "requested" and "shown" in kinds and kinds[-1] in ("result", "shown")
    assert [k for k in kinds if k in ("decided", "started", "result")] == ["decided", "started", "result"]
    decided = next(e for e in story if e.kind == "decided")
    assert decided.fields["by"] == f"telegram:{MANAGERS[0].id}" and decided.fields["via"] == "telegram"
    digests = {e.fields.get("args_digest") for e in story if e.kind in ("requested", "shown", "started", "result")}
    assert len(digests) == 1  # what ran is what was shown is what was asked
    assert "hunter2" not in "".join(trail.export_lines(await trail.entries()))
    calls = [e for e in await trail.entries() if e.kind == "call"]
    assert [e.subject for e in calls] == ["pay"] and calls[0].fields["key"] == rid
    verdict = await trail.verify()
    assert verdict.ok and verdict.checked == len(await trail.entries())
    await store.close()


async def test_concurrent_appends_from_two_stores_keep_one_chain(spec: dict[str, Any]) -> None:
    first = open_spec(spec)
    second = first if spec["backend"] == "memory" else open_spec(spec)  # memory: two trails on one store
    a, b = AuditTrail(first), AuditTrail(second)
    await asyncio.gather(*[(a if i % 2 else b).append("call", f"t{i}", {"n": i}) for i in range(40)])
    verdict = await a.verify()
    assert verdict.ok and verdict.checked == 40
    head = await first.get("audit_trail_head", "head")
    assert head is not None and head.value["seq"] == 40  # the head never falls behind the chain
    assert sorted(e.fields["n"] for e in await b.entries()) == list(range(40))
    await first.close()
    if second is not first:
        await second.close()


@pytest.mark.parametrize("tamper", ["edit", "delete", "reorder", "truncate"])
async def test_tampering_is_found_where_it_is(spec: dict[str, Any], tamper: str) -> None:
    store = open_spec(spec)
    trail = AuditTrail(store)
    for i in range(8):
        await trail.append("call", "pay", {"n": i, "principal": "telegram:100"})
    assert (await trail.verify()).ok
    entries = {r.key: r for r in await store.scan(COLLECTION)}
    keys = sorted(entries)
    if tamper == "edit":  # someone makes entry 4 say another principal did it
        value = dict(entries[keys[3]].value)
        value["fields"] = {**value["fields"], "principal": "telegram:999"}
        await store.put(COLLECTION, keys[3], value)
        where, why = 4, "edited"
    elif tamper == "delete":
        await store.delete(COLLECTION, keys[4])
        where, why = 5, "deleted or reordered"
    elif tamper == "reorder":  # entries 3 and 6 swap places
        three, six = dict(entries[keys[2]].value), dict(entries[keys[5]].value)
        await store.put(COLLECTION, keys[2], six)
        await store.put(COLLECTION, keys[5], three)
        where, why = 3, "out of place"
    else:
        await store.delete(COLLECTION, keys[7])
        where, why = 8, "deleted"
    verdict = await trail.verify()
    assert not verdict.ok and verdict.broken_at == where and why in verdict.reason, verdict
    await store.close()


def test_the_cli_verifies_exports_and_tells(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from milpa_chat.cli import main
    from milpa_chat.store.sqlite import SqliteStore

    db = tmp_path / "bot.db"

    async def make() -> str:
        store = SqliteStore(db)
        _, rid = await a_story(store)
        await store.close()
        return rid

    rid = asyncio.run(make())
    assert main(["audit", "verify", "--store", str(db)]) == 0
    assert "The audit trail holds" in capsys.readouterr().out
    assert main(["audit", "show", rid, "--store", str(db)]) == 0
    told = capsys.readouterr().out
    assert "requested" in told and "decided" in told and f"by=telegram:{MANAGERS[0].id}" in told
    assert main(["audit", "export", "--store", str(db)]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) >= 6
    import sqlite3

    conn = sqlite3.connect(db)
    conn.execute(
        "UPDATE milpa_records SET value = replace(value, 'telegram:200', 'telegram:666') "
        "WHERE collection = ? AND value LIKE '%\"decided\"%'",
        (COLLECTION,),
    )
    conn.commit()
    conn.close()
    assert main(["audit", "verify", "--store", str(db)]) == 1
    assert "edited" in capsys.readouterr().out


def _append_from_process(spec: dict[str, Any], worker: int, count: int, start_at: float) -> None:
    """Process target: wait for the common start, then append ``count`` entries as fast as possible."""
    import time

    async def run() -> None:
        store = open_spec(spec, max_size=2)
        trail = AuditTrail(store)
        await asyncio.sleep(max(0.0, start_at - time.time()))
        await asyncio.gather(*[trail.append("call", f"w{worker}", {"worker": worker, "n": n}) for n in range(count)])
        await store.close()

    asyncio.run(run())


@pytest.fixture
def postgres_spec(tmp_path: Path) -> Iterator[dict[str, Any]]:
    yield from backend_spec("postgres", tmp_path)


@pytest.mark.slow
async def test_four_processes_appending_at_once_on_postgresql_keep_one_chain(postgres_spec: dict[str, Any]) -> None:
    import multiprocessing
    import time

    spec = postgres_spec
    context = multiprocessing.get_context("spawn")
    start_at = time.time() + 4.0  # every interpreter is up and connected by then
    procs = [context.Process(target=_append_from_process, args=(spec, w, 25, start_at)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        await asyncio.to_thread(p.join, 120)
        assert p.exitcode == 0
    store = open_spec(spec)
    trail = AuditTrail(store)
    verdict = await trail.verify()
    assert verdict.ok and verdict.checked == 100, verdict
    written = sorted((e.fields["worker"], e.fields["n"]) for e in await trail.entries())
    assert written == [(w, n) for w in range(4) for n in range(25)]  # none lost, none twice
    head = await store.get("audit_trail_head", "head")
    assert head is not None and head.value["seq"] == 100  # the head never falls behind the chain
    await store.close()

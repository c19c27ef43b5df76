"""Lanes: each writing process keeps a chain of its own, registered by an entry of the main chain. Several real
processes append at once, one is SIGKILLed, and ``milpa-chat audit verify`` checks every lane with the main
chain. Then someone with write access to the database tampers with the lanes, every way there is (a whole
lane deleted, a lane's end truncated, entries moved across lanes, a lane forged, a lane rewritten and
re-hashed); the command exits non-zero naming the lane and the entry. Prints the table."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from milpa_chat.runtime.trail import COLLECTION, AuditTrail
from milpa_chat.runtime.trail_chain import GENESIS, HEAD, LANE_HEADS, LANES, entry_hash, lane_key
from milpa_chat.runtime.trail_checkpoints import CHECKPOINTS, parse_checkpoints
from milpa_chat.runtime.trail_keys import PublicKey, SigningKey
from milpa_chat.store import Store
from tests.runtime.test_trail_tamper import backend, cli
from tests.store._workers import open_spec

__all__ = ["backend"]

PER_LANE, EVERY = 6, 4  # each lane's writer signs a checkpoint at its entry 4


async def _empty(store: Store) -> None:
    for collection in (HEAD[0], COLLECTION, CHECKPOINTS, LANES, LANE_HEADS):
        for record in await store.scan(collection):
            await store.delete(collection, record.key)


async def a_laned_trail(backend: tuple[dict[str, Any], str], tmp_path: Path) -> tuple[Path, Path, Path]:
    """Main-chain entries and lanes ``a`` and ``b`` of ``PER_LANE`` entries each, signed by a new key; every lane
    head signed (``checkpoint --now``) and exported. (the key, the public key, the exported checkpoints)"""
    spec, url = backend
    await asyncio.to_thread(tmp_path.mkdir, parents=True, exist_ok=True)
    key, public = tmp_path / "audit.key", tmp_path / "audit.pub"
    code, printed = await cli("audit", "keygen", "--out", str(key))
    assert code == 0
    public.write_text(printed.splitlines()[0] + "\n")
    store = open_spec(spec)
    await _empty(store)
    main = AuditTrail(store, key=key, checkpoint_every=EVERY, checkpoint_minutes=0, lane="")
    lanes = {n: AuditTrail(store, key=key, checkpoint_every=EVERY, checkpoint_minutes=0, lane=n) for n in "ab"}
    await main.append("call", "start", {})
    for i in range(PER_LANE):
        await asyncio.gather(*(t.append("call", f"pay-{n}", {"n": i}) for n, t in lanes.items()))
    await store.close()
    exported = tmp_path / "checkpoints.jsonl"
    code, printed = await cli(
        "audit", "checkpoint", "--now", "--key-file", str(key), "--store", url, "--out", str(exported)
    )
    assert code == 0, printed
    code, printed = await cli("audit", "verify", "--store", url, "--public-key", str(public))
    assert code == 0, printed
    assert f"lane a: {PER_LANE} entries" in printed and f"lane b: {PER_LANE} entries" in printed, printed
    return key, public, exported


async def _lane(store: Store, lane: str) -> dict[int, dict[str, Any]]:
    return {int(r.value["seq"]): dict(r.value) for r in await store.scan(LANES, prefix=f"{lane}/")}


def _hashed(value: dict[str, Any]) -> dict[str, Any]:
    return {**value, "hash": entry_hash({k: value[k] for k in ("seq", "at", "kind", "subject", "fields", "prev")})}


async def delete_whole_lane(store: Store) -> None:
    for seq in await _lane(store, "b"):
        await store.delete(LANES, lane_key("b", seq))
    await store.delete(LANE_HEADS, "b")


async def truncate_lane_end(store: Store) -> None:
    for seq in (5, 6):
        await store.delete(LANES, lane_key("a", seq))


async def truncate_lane_end_head_lowered(store: Store) -> None:
    await truncate_lane_end(store)
    head = await store.get(LANE_HEADS, "a")
    assert head is not None
    last = (await _lane(store, "a"))[4]
    await store.put(LANE_HEADS, "a", {**head.value, "seq": 4, "hash": last["hash"], "prev": last["prev"]})
    for record in await store.scan(CHECKPOINTS):  # the stored ones would tell: only the exported remain
        await store.delete(CHECKPOINTS, record.key)


async def reorder_across_lanes(store: Store) -> None:  # entry 3 of lane a and entry 3 of lane b swap places
    a, b = await _lane(store, "a"), await _lane(store, "b")
    await store.put(LANES, lane_key("a", 3), b[3])
    await store.put(LANES, lane_key("b", 3), a[3])


async def edit_in_lane(store: Store) -> None:
    value = (await _lane(store, "b"))[2]
    await store.put(LANES, lane_key("b", 2), {**value, "fields": {"n": 999}})


async def forge_lane(store: Store) -> None:
    """A lane ``c`` of two well-chained entries and a head naming them, registered by nothing."""
    prev = GENESIS
    for seq in (1, 2):
        value = _hashed({"seq": seq, "at": 1.0, "kind": "call", "subject": "pay", "fields": {}, "prev": prev})
        await store.insert(LANES, lane_key("c", seq), value)
        prev = value["hash"]
    await store.insert(LANE_HEADS, "c", {"seq": 2, "hash": prev, "prev": value["prev"]})


async def forge_lane_linked_to_a_registration(store: Store) -> None:
    """A copy of lane a under the name ``c`` (its first entry links to lane a's registration)."""
    for seq, value in (await _lane(store, "a")).items():
        await store.insert(LANES, lane_key("c", seq), value)
    head = await store.get(LANE_HEADS, "a")
    assert head is not None
    await store.insert(LANE_HEADS, "c", head.value)


async def rewrite_lane(store: Store) -> None:
    """Lane a's entry 2 says something else; every hash after it and the head are recomputed, the stored
    checkpoints deleted."""
    records = await _lane(store, "a")
    prev = records[1]["hash"]
    for seq in range(2, PER_LANE + 1):
        value = records[seq]
        if seq == 2:
            value["fields"] = {"n": 999}
        value = _hashed({**value, "prev": prev})
        await store.put(LANES, lane_key("a", seq), value)
        prev = value["hash"]
    head = await store.get(LANE_HEADS, "a")
    assert head is not None
    await store.put(LANE_HEADS, "a", {**head.value, "hash": prev, "prev": value["prev"]})
    for record in await store.scan(CHECKPOINTS):
        await store.delete(CHECKPOINTS, record.key)


Tamper = Callable[[Store], Awaitable[None]]
# name, tamper, verify given the exported checkpoints?, the lane and the entry it must name
CASES: list[tuple[str, Tamper, bool, str, int]] = [
    ("delete a whole lane (entries and head)", delete_whole_lane, False, "b", 1),
    ("truncate one lane's end, head kept", truncate_lane_end, False, "a", 5),
    ("truncate one lane's end, head moved back, vs exported", truncate_lane_end_head_lowered, True, "a", 5),
    ("reorder: entries swapped across lanes", reorder_across_lanes, False, "a", 3),
    ("edit an entry of a lane", edit_in_lane, False, "b", 2),
    ("forge a lane", forge_lane, False, "c", 1),
    ("forge a lane: a copy of another", forge_lane_linked_to_a_registration, False, "c", 1),
    ("rewrite a lane and its head, vs exported", rewrite_lane, True, "a", 4),
]


async def one_case(
    backend: tuple[dict[str, Any], str], folder: Path, tamper: Tamper, exported: bool
) -> tuple[int, str | None, int | None, tuple[str, int | None] | None]:
    """(exit status, the lane and entry the command names, what the library names)."""
    spec, url = backend
    _, public, file = await a_laned_trail(backend, folder)
    store = open_spec(spec)
    try:
        await tamper(store)
        given = ["--checkpoints", str(file), "--public-key", str(public)] if exported else []
        code, printed = await cli("audit", "verify", "--store", url, *given)
        found = re.search(r"broken at entry (\d+) of lane (\S+):", printed)
        checkpoints = parse_checkpoints(file.read_text().splitlines(), "export", PublicKey.load(str(public)))
        verdict = await AuditTrail(store).verify(checkpoints if exported else ())
        if exported:  # without what was kept outside the store, a rewrite made whole passes (the documented limit)
            assert (await AuditTrail(store).verify()).ok
        return (
            code,
            found.group(2) if found else None,
            int(found.group(1)) if found else None,
            None if verdict.ok else (verdict.lane, verdict.broken_at),
        )
    finally:
        await store.close()


async def test_every_tampering_of_a_lane_is_found_at_its_lane_and_entry(
    backend: tuple[dict[str, Any], str], tmp_path: Path
) -> None:
    rows = []
    for number, (name, tamper, exported, lane, where) in enumerate(CASES):
        rows.append((name, lane, where, *await one_case(backend, tmp_path / str(number), tamper, exported)))
    print(f"\naudit trail lanes tampering on {backend[0]['backend']} -> detected? in which lane, at which entry:")
    for name, lane, where, code, cli_lane, cli_at, lib in rows:
        told = f"exit {code}, lane {cli_lane} entry {cli_at}" if code else f"exit {code}: NOT detected"
        print(f"  {name:56} {lane}:{where}  {told:28} library {lib}")
    assert all(
        code == 1 and (cli_lane, cli_at) == (lane, where) and lib == (lane, where)
        for _, lane, where, code, cli_lane, cli_at, lib in rows
    ), rows


async def test_a_checkpoint_signs_every_lane_head(backend: tuple[dict[str, Any], str], tmp_path: Path) -> None:
    _, public, exported = await a_laned_trail(backend, tmp_path)
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    signed_now = [c for c in lines if set(c.get("lanes", {})) == {"a", "b"}]
    assert signed_now and all(c["lanes"][n][0] == PER_LANE for c in signed_now for n in "ab"), lines
    by_lane = [c for c in lines if set(c.get("lanes", {})) in ({"a"}, {"b"})]
    assert sorted(c["lanes"].popitem()[1][0] for c in by_lane) == [EVERY, EVERY], lines
    altered = {**signed_now[0], "lanes": {**signed_now[0]["lanes"], "a": [PER_LANE, "f" * 64]}}
    exported.write_text(json.dumps(altered) + "\n")
    code, printed = await cli(
        "audit", "verify", "--store", backend[1], "--checkpoints", str(exported), "--public-key", str(public)
    )
    assert code == 2 and "signature does not verify" in printed, printed


async def test_one_process_keeps_one_chain_and_no_lane(backend: tuple[dict[str, Any], str]) -> None:
    store = open_spec(backend[0])
    try:
        await _empty(store)
        trail = AuditTrail(store)
        for i in range(3):
            await trail.append("call", "pay", {"n": i})
        verdict = await trail.verify()
        assert verdict.ok and verdict.checked == 3 and verdict.lanes == ()
        assert await store.scan(LANES) == [] and await store.scan(LANE_HEADS) == []
        assert "lane" not in str(verdict)
    finally:
        await store.close()


def _append_in_a_lane(spec: dict[str, Any], seed: bytes, count: int | None) -> None:
    """Process target: append ``count`` signed entries to this process's lane (``None``: until killed)."""

    async def run() -> None:
        store = open_spec(spec, max_size=2) if spec["backend"] == "postgres" else open_spec(spec)
        trail = AuditTrail(
            store, key=SigningKey.from_seed(seed), checkpoint_every=7, checkpoint_minutes=0, lane="worker"
        )
        n = 0
        while count is None or n < count:
            await trail.append_all([("call", "loop", {"n": n}), ("result", "loop", {"n": n})])
            n += 1
        await store.close()

    asyncio.run(run())


async def test_processes_append_in_lanes_and_one_killed_mid_append_leaves_a_trail_that_holds(
    backend: tuple[dict[str, Any], str],
) -> None:
    import multiprocessing
    import os
    import signal

    from milpa_chat.testing import eventually

    spec, url = backend
    seed = bytes(range(32))
    store = open_spec(spec)
    await _empty(store)
    context = multiprocessing.get_context("spawn")
    finishing = [context.Process(target=_append_in_a_lane, args=(spec, seed, 20)) for _ in range(3)]
    killed = context.Process(target=_append_in_a_lane, args=(spec, seed, None))
    for process in [*finishing, killed]:
        process.start()
    main = AuditTrail(store, key=SigningKey.from_seed(seed), lane="")
    for i in range(10):  # the main chain is written meanwhile (registrations land between these)
        await main.append("call", "main", {"n": i})

    async def written() -> bool:
        return len(await store.scan(LANES)) >= 3 * 40 + 30

    await eventually(written, timeout=120, what="the lanes written by the other processes")
    assert killed.pid is not None
    os.kill(killed.pid, signal.SIGKILL)
    for process in [*finishing, killed]:
        await asyncio.to_thread(process.join, 30)
    assert [p.exitcode for p in finishing] == [0, 0, 0] and killed.exitcode == -signal.SIGKILL
    code, printed = await cli(
        "audit", "verify", "--store", url, "--public-key", SigningKey.from_seed(seed).public.text()
    )
    print(f"\n4 processes in lanes on {spec['backend']}, one SIGKILLed mid-append: {printed.strip()}")
    assert code == 0 and "holds: 14 entries" in printed, printed  # 10 + a registration per process
    counts = sorted(int(n) for n in re.findall(r"lane \S+: (\d+) entries", printed))
    assert len(counts) == 4 and counts.count(40) >= 3, counts
    assert sum(counts) == len(await store.scan(LANES))
    await store.close()


async def test_two_writers_of_one_named_lane_keep_one_lane_that_holds(backend: tuple[dict[str, Any], str]) -> None:
    """A worker name given twice (a restart, two trails in one process): both register it, one registration
    counts, both append to the one lane at the next positions."""
    spec, url = backend
    stores = [open_spec(spec), open_spec(spec)]
    try:
        await _empty(stores[0])
        trails = [AuditTrail(store, lane="billing-1") for store in stores]
        await asyncio.gather(*(t.append("call", f"pay-{i}", {"n": i}) for i in range(20) for t in trails))
        code, printed = await cli("audit", "verify", "--store", url)
        assert code == 0 and "lane billing-1: 40 entries" in printed, printed
        assert 1 <= (await trails[0].verify()).checked <= 2  # one registration, or both
    finally:
        for store in stores:
            await store.close()

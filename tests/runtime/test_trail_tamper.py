"""Someone with write access to the database tampers with the audit trail, every way there is; ``milpa-chat audit
verify`` (the real command, on a real SQLite file and a real PostgreSQL database) exits non-zero and names the
entry where the tampering is. Signed checkpoints and a copied head catch even a whole chain rewritten and
re-hashed. Prints the table: tamper kind -> detected? at which entry."""

from __future__ import annotations

import asyncio
import json
import re
import secrets
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from milpa_chat.cli import main
from milpa_chat.runtime.trail import COLLECTION, AuditTrail
from milpa_chat.runtime.trail_chain import GENESIS, HEAD, entry_hash, entry_key
from milpa_chat.runtime.trail_checkpoints import CHECKPOINTS, Checkpoint, parse_checkpoints, parse_expected_head
from milpa_chat.runtime.trail_keys import PublicKey, SigningKey
from milpa_chat.store import Store
from tests.store._workers import open_spec

ENTRIES, EVERY = 10, 4  # checkpoints signed at entries 4 and 8


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[dict[str, Any], str]]:
    """(a spec for open_spec, the --store the command line is given): a SQLite file, or a fresh PostgreSQL
    database (the command line uses its public schema), dropped afterwards."""
    if request.param == "sqlite":
        path = str(tmp_path / "trail.db")
        yield {"backend": "sqlite", "path": path}, path
        return
    import psycopg

    from tests.conftest import POSTGRES_DSN, REQUIRE_POSTGRES

    name = f"milpa_trail_{secrets.token_hex(5)}"
    try:
        with psycopg.connect(POSTGRES_DSN, connect_timeout=3, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except Exception as exc:
        if REQUIRE_POSTGRES:
            pytest.fail(f"PostgreSQL at {POSTGRES_DSN} is unreachable ({exc}); MILPA_REQUIRE_POSTGRES=1 requires it")
        pytest.skip(f"PostgreSQL at {POSTGRES_DSN} is unreachable ({exc})")
    dsn = urlunsplit(urlsplit(POSTGRES_DSN)._replace(path=f"/{name}"))
    yield {"backend": "postgres", "dsn": dsn, "schema": "public"}, dsn
    with psycopg.connect(POSTGRES_DSN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class Setup:
    spec: dict[str, Any]
    url: str
    key: Path
    public: Path
    exported: Path  # the checkpoints, exported before the tampering
    head: str  # SEQ:HASH as verify printed it before the tampering


async def cli(*argv: str) -> tuple[int, str]:
    """The real ``milpa-chat`` command (its own event loop, so in a thread), and what it printed."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()

    def run() -> int:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            return main(list(argv))

    code = await asyncio.to_thread(run)
    return code, out.getvalue() + err.getvalue()


async def a_trail(backend: tuple[dict[str, Any], str], tmp_path: Path, entries: int = ENTRIES) -> Setup:
    """A trail of ``entries`` entries signed by a new key, its checkpoints exported and its head copied; the
    store's trail is emptied first (each tampering starts from a fresh one)."""
    spec, url = backend
    await asyncio.to_thread(tmp_path.mkdir, parents=True, exist_ok=True)
    key, public = tmp_path / "audit.key", tmp_path / "audit.pub"
    code, printed = await cli("audit", "keygen", "--out", str(key))
    assert code == 0
    public.write_text(printed.splitlines()[0] + "\n")
    store = open_spec(spec)
    for collection, *_ in (HEAD, (COLLECTION,), (CHECKPOINTS,)):
        for record in await store.scan(collection):
            await store.delete(collection, record.key)
    trail = AuditTrail(store, key=key, checkpoint_every=EVERY, checkpoint_minutes=0)
    for i in range(entries):
        await trail.append("call", "pay", {"n": i, "principal": "telegram:100"})
    await store.close()
    exported = tmp_path / "checkpoints.jsonl"
    assert (await cli("audit", "checkpoint", "--store", url, "--out", str(exported)))[0] == 0
    code, printed = await cli("audit", "verify", "--store", url)
    assert code == 0, printed
    head = re.search(r"head (\d+:[0-9a-f]{64})", printed)
    assert head is not None, printed
    return Setup(spec, url, key, public, exported, head.group(1))


# --------------------------------------------------------------------------------------------- tampering
async def _records(store: Store) -> dict[int, dict[str, Any]]:
    return {int(r.value["seq"]): dict(r.value) for r in await store.scan(COLLECTION)}


async def edit(store: Store) -> None:  # entry 4 now says another principal did it
    value = (await _records(store))[4]
    await store.put(COLLECTION, entry_key(4), {**value, "fields": {**value["fields"], "principal": "telegram:999"}})


async def delete_middle(store: Store) -> None:
    await store.delete(COLLECTION, entry_key(5))


async def reorder(store: Store) -> None:  # entries 3 and 6 swap places
    records = await _records(store)
    await store.put(COLLECTION, entry_key(3), records[6])
    await store.put(COLLECTION, entry_key(6), records[3])


async def truncate_with_head(store: Store) -> None:
    for seq in (9, 10):
        await store.delete(COLLECTION, entry_key(seq))
    await store.delete(*HEAD)


async def truncate_head_kept(store: Store) -> None:
    for seq in (9, 10):
        await store.delete(COLLECTION, entry_key(seq))


async def truncate_head_lowered(store: Store) -> None:
    await truncate_head_kept(store)
    head = await store.get(*HEAD)
    assert head is not None
    await store.put(*HEAD, {**head.value, "seq": 8})


async def edit_last_rehashed(store: Store) -> None:
    value = (await _records(store))[10]
    value["fields"] = {**value["fields"], "principal": "telegram:999"}
    body = {k: value[k] for k in ("seq", "at", "kind", "subject", "fields", "prev")}
    await store.put(COLLECTION, entry_key(10), {**value, "hash": entry_hash(body)})


async def add_past_the_head(store: Store) -> None:  # a well-chained entry 11, the head left at 10
    last = (await _records(store))[10]
    body = {
        "seq": 11,
        "at": last["at"] + 1,
        "kind": "call",
        "subject": "pay",
        "fields": {"n": 99},
        "prev": last["hash"],
    }
    await store.insert(COLLECTION, entry_key(11), {**body, "hash": entry_hash(body)})


async def rewrite_all(store: Store, edit_at: int = 3, keep: int = ENTRIES) -> None:
    """Entry ``edit_at`` says another principal did it; every hash after it and the head are recomputed (the
    entries after ``keep`` are dropped), and the stored checkpoints, which no longer match, are deleted."""
    records, prev = await _records(store), GENESIS
    for seq in range(1, keep + 1):
        value = records[seq]
        if seq == edit_at:
            value["fields"] = {**value["fields"], "principal": "telegram:999"}
        value["prev"] = prev
        value["hash"] = prev = entry_hash({k: value[k] for k in ("seq", "at", "kind", "subject", "fields", "prev")})
        await store.put(COLLECTION, entry_key(seq), value)
    for seq in range(keep + 1, ENTRIES + 1):
        await store.delete(COLLECTION, entry_key(seq))
    await store.put(*HEAD, {"seq": keep, "hash": prev, "prev": records[keep]["prev"]})
    for record in await store.scan(CHECKPOINTS):
        await store.delete(CHECKPOINTS, record.key)


async def truncate_consistently(store: Store) -> None:
    await rewrite_all(store, edit_at=0, keep=8)


Tamper = Callable[[Store], Awaitable[None]]
# name, tamper, what verify is given ("" nothing, "checkpoints" the exported file, "head" the copied head), where
CASES: list[tuple[str, Tamper, str, int]] = [
    ("edit an entry", edit, "", 4),
    ("delete an entry in the middle", delete_middle, "", 5),
    ("reorder two entries", reorder, "", 3),
    ("truncate the end with the head row", truncate_with_head, "", 9),
    ("truncate the end, head kept", truncate_head_kept, "", 9),
    ("truncate the end, head's seq lowered", truncate_head_lowered, "", 9),
    ("edit the last entry, hash recomputed", edit_last_rehashed, "", 10),
    ("add an entry past the head", add_past_the_head, "", 11),
    ("rewrite the whole chain, vs exported checkpoints", rewrite_all, "checkpoints", 4),
    ("rewrite the whole chain, vs --expect-head", rewrite_all, "head", 10),
    ("truncate, head rewritten to match, vs --expect-head", truncate_consistently, "head", 9),
]


def _anchors(setup: Setup, given: str) -> list[str]:
    if given == "checkpoints":
        return ["--checkpoints", str(setup.exported), "--public-key", str(setup.public)]
    return ["--expect-head", setup.head] if given == "head" else []


async def one_case(
    backend: tuple[dict[str, Any], str], folder: Path, tamper: Tamper, given: str, where: int
) -> tuple[int, int | None, int | None]:
    """Tamper with a fresh trail; (the command's exit status, the entry it names, the entry the library names)."""
    setup = await a_trail(backend, folder)
    store = open_spec(setup.spec)
    try:
        await tamper(store)
        assert [json.loads(line)["seq"] for line in setup.exported.read_text().splitlines()] == [4, 8]
        code, printed = await cli("audit", "verify", "--store", setup.url, *_anchors(setup, given))
        found = re.search(r"broken at entry (\d+)", printed)
        if given == "checkpoints":  # the library, given the same exported file
            lines = setup.exported.read_text().splitlines()
            public = PublicKey.load(str(setup.public))
            verdict = await AuditTrail(store).verify(parse_checkpoints(lines, "export", public))
        else:
            verdict = await AuditTrail(store, public_key=str(setup.public)).verify(
                expect=parse_expected_head(setup.head) if given == "head" else None
            )
        if given:  # the limit the docs state: without what was kept outside the store, this passes
            assert (await AuditTrail(store).verify()).ok
        return code, int(found.group(1)) if found else None, None if verdict.ok else verdict.broken_at
    finally:
        await store.close()


async def test_every_tampering_is_found_at_its_entry(backend: tuple[dict[str, Any], str], tmp_path: Path) -> None:
    rows = []
    for number, (name, tamper, given, where) in enumerate(CASES):
        rows.append((name, where, *await one_case(backend, tmp_path / str(number), tamper, given, where)))
    print(f"\naudit trail tampering on {backend[0]['backend']} -> detected? at which entry:")
    print(f"  {'tamper kind':52} {'expected':>8}  {'milpa-chat audit verify':24} library")
    for name, where, code, cli_at, lib_at in rows:
        told = f"exit {code}, entry {cli_at}" if code else f"exit {code}: NOT detected"
        print(f"  {name:52} {where:>8}  {told:24} {lib_at if lib_at is not None else 'NOT detected'}")
    assert all(code == 1 and cli_at == where == lib_at for _, where, code, cli_at, lib_at in rows), rows


# ------------------------------------------------------------------------------------------- clean trails
async def test_untampered_trails_verify_clean(backend: tuple[dict[str, Any], str], tmp_path: Path) -> None:
    spec, url = backend
    code, printed = await cli("audit", "verify", "--store", url)  # an empty trail
    assert code == 0 and "holds: 0 entries" in printed, printed
    setup = await a_trail(backend, tmp_path)
    code, printed = await cli(
        "audit",
        "verify",
        "--store",
        url,
        "--checkpoints",
        str(setup.exported),
        "--public-key",
        str(setup.public),
        "--expect-head",
        setup.head,
    )
    assert code == 0 and f"holds: {ENTRIES} entries" in printed and "3 pinned" in printed, printed
    bare = setup.head.split(":")[1]  # the hash alone: some entry must have it
    assert (await cli("audit", "verify", "--store", url, "--expect-head", bare))[0] == 0
    code, printed = await cli("audit", "checkpoint", "--now", "--key-file", str(setup.key), "--store", url)
    assert code == 0 and [json.loads(line)["seq"] for line in printed.splitlines()] == [4, 8, ENTRIES], printed
    store = open_spec(spec)  # the trail goes on growing past the exported checkpoints and the copied head
    await AuditTrail(store, key=setup.key, checkpoint_every=EVERY, checkpoint_minutes=0).append("call", "x", {})
    await store.close()
    code, printed = await cli(
        "audit",
        "verify",
        "--store",
        url,
        "--checkpoints",
        str(setup.exported),
        "--public-key",
        str(setup.public),
        "--expect-head",
        setup.head,
    )
    assert code == 0 and f"holds: {ENTRIES + 1} entries" in printed, printed


async def test_checkpoints_of_another_key_are_refused(backend: tuple[dict[str, Any], str], tmp_path: Path) -> None:
    setup = await a_trail(backend, tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    code, printed = await cli("audit", "keygen", "--out", str(other / "audit.key"))
    assert code == 0
    code, printed = await cli(
        "audit",
        "verify",
        "--store",
        setup.url,
        "--checkpoints",
        str(setup.exported),
        "--public-key",
        printed.splitlines()[0],
    )
    assert code == 2 and "was signed by key" in printed and "pass the public key it was signed with" in printed
    assert len(printed.strip().splitlines()) == 1, printed
    # a checkpoint signed with another key but claiming ours: its signature does not verify

    lines = setup.exported.read_text().splitlines()
    real = json.loads(lines[0])
    forged = Checkpoint.sign(SigningKey.from_file(other / "audit.key"), real["seq"], "f" * 64, real["at"])
    (tmp_path / "forged.jsonl").write_text(json.dumps({**forged.to_dict(), "key": real["key"]}) + "\n")
    code, printed = await cli(
        "audit",
        "verify",
        "--store",
        setup.url,
        "--checkpoints",
        str(tmp_path / "forged.jsonl"),
        "--public-key",
        str(setup.public),
    )
    assert code == 2 and "signature does not verify" in printed, printed


async def test_bad_keys_and_lines_are_one_line_errors_with_the_fix(
    backend: tuple[dict[str, Any], str], tmp_path: Path
) -> None:
    setup = await a_trail(backend, tmp_path, entries=EVERY)
    not_a_key = tmp_path / "key.txt"
    not_a_key.write_text("hello\n")
    bad_line = tmp_path / "bad.jsonl"
    bad_line.write_text(setup.exported.read_text() + '{"seq": 9, "hash": "ab"}\n')
    cases = [
        (
            ["audit", "checkpoint", "--now", "--key-file", str(tmp_path / "missing.key")],
            "does not exist",
            "audit keygen --out FILE",
        ),
        (
            ["audit", "checkpoint", "--now", "--key-file", str(not_a_key)],
            "not an Ed25519 private key",
            "audit keygen --out FILE",
        ),
        (
            ["audit", "verify", "--checkpoints", str(setup.exported), "--public-key", "nonsense"],
            "neither an Ed25519 public key",
            "keygen printed",
        ),
        (
            ["audit", "verify", "--checkpoints", str(setup.exported), "--public-key", str(setup.key)],
            "holds a private key",
            "pass its public key",
        ),
        (["audit", "verify", "--checkpoints", str(setup.exported)], "needs the public key", "--public-key KEY"),
        (
            ["audit", "verify", "--checkpoints", str(bad_line), "--public-key", str(setup.public)],
            "line 2 is not a checkpoint",
            "milpa-chat audit checkpoint --out FILE",
        ),
        (["audit", "verify", "--expect-head", "12:xyz"], "write SEQ:HASH or HASH", "head 412:"),
    ]
    for argv, what, fix in cases:
        code, printed = await cli(*argv, "--store", setup.url)
        assert code == 2 and what in printed and fix in printed, (argv, printed)
        assert len(printed.strip().splitlines()) == 1, printed


# -------------------------------------------------------------------------------- writes and concurrency
class CountingStore:
    """The real store, with its writes counted (what one append costs)."""

    def __init__(self, store: Store) -> None:
        self.store, self.writes = store, 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.store, name)
        if name in ("insert", "put", "update", "update_with", "delete", "take"):

            async def counted(*args: Any, **kwargs: Any) -> Any:
                self.writes += 1
                return await attr(*args, **kwargs)

            return counted
        return attr


async def test_an_append_costs_one_write_its_checkpoint_none_more(backend: tuple[dict[str, Any], str]) -> None:
    spec, _ = backend
    store = open_spec(spec)
    counting = CountingStore(store)
    plain = AuditTrail(counting, checkpoint_every=EVERY)
    for i in range(12):
        await plain.append("call", "x", {"n": i})
    without_key = counting.writes
    signed = AuditTrail(
        counting,
        key=SigningKey.from_seed(bytes(32)),
        checkpoint_every=EVERY,
        checkpoint_minutes=0,
    )
    for i in range(12):
        await signed.append("call", "x", {"n": i})
    print(
        f"\nwrites for 12 appends on {spec['backend']}: {without_key} without a key, "
        f"{counting.writes - without_key} with a key (a checkpoint every {EVERY} entries)"
    )
    # the first append makes the head (the entry, then the head); every later one writes its entry, the head and
    # any checkpoint due in one transaction
    assert without_key == 2 + 11 and counting.writes - without_key == 12
    assert [c.seq for c in await signed.checkpoints()] == [16, 20, 24]
    assert (await signed.verify()).ok
    await store.close()


async def test_concurrent_signed_appends_keep_one_chain_and_one_checkpoint_each(
    backend: tuple[dict[str, Any], str],
) -> None:
    spec, _ = backend
    key = SigningKey.from_seed(bytes(range(32)))
    first, second = open_spec(spec), open_spec(spec)
    a, b = (AuditTrail(s, key=key, checkpoint_every=5, checkpoint_minutes=0) for s in (first, second))
    await asyncio.gather(*[(a if i % 2 else b).append("call", f"t{i}", {"n": i}) for i in range(40)])
    verdict = await a.verify()
    assert verdict.ok and verdict.checked == 40 and verdict.pinned == 8, verdict
    assert [c.seq for c in await b.checkpoints()] == list(range(5, 41, 5))
    head = await first.get(*HEAD)
    assert head is not None and head.value["seq"] == 40 and head.value["prev"] == (await a.entries())[-2].hash
    await first.close()
    await second.close()


async def test_a_checkpoint_is_signed_when_the_minutes_have_passed_whoever_appends(
    backend: tuple[dict[str, Any], str],
) -> None:
    from milpa_chat.testing import ManualClock

    spec, _ = backend
    clock = ManualClock()
    first, second = open_spec(spec, clock=clock), open_spec(spec, clock=clock)
    key = SigningKey.from_seed(bytes(32))
    a, b = (AuditTrail(s, key=key, checkpoint_every=0, checkpoint_minutes=1) for s in (first, second))
    await a.append("call", "x", {})  # 1: none signed yet
    clock.advance(30)
    await b.append("call", "x", {})  # 2: the head says one was signed 30 s ago
    clock.advance(31)
    await b.append("call", "x", {})  # 3: a minute has passed
    await a.append("call", "x", {})  # 4: and b's checkpoint is in the head
    assert [c.seq for c in await a.checkpoints()] == [1, 3]
    assert (await a.verify()).pinned == 2
    await first.close()
    await second.close()


async def test_a_forged_stored_checkpoint_is_reported_where_it_pins(backend: tuple[dict[str, Any], str]) -> None:
    spec, _ = backend
    store = open_spec(spec)
    trail = AuditTrail(store, key=SigningKey.from_seed(bytes(32)), checkpoint_every=4, checkpoint_minutes=0)
    for i in range(8):
        await trail.append("call", "x", {"n": i})
    stored = await store.get(CHECKPOINTS, entry_key(4))
    assert stored is not None
    forged = Checkpoint.sign(SigningKey.from_seed(bytes([1] * 32)), 4, stored.value["hash"], stored.value["at"])
    await store.put(CHECKPOINTS, entry_key(4), {**forged.to_dict(), "key": stored.value["key"]})
    verdict = await trail.verify()
    assert not verdict.ok and verdict.broken_at == 4 and "forged or altered" in verdict.reason, verdict
    await store.close()


async def test_verify_while_two_stores_append_never_reports_a_break(backend: tuple[dict[str, Any], str]) -> None:
    """A writer between its entry and its head write disagrees with the head for a moment: verify reads again."""
    spec, _ = backend
    first, second, reader = open_spec(spec), open_spec(spec), open_spec(spec)
    key = SigningKey.from_seed(bytes(32))
    a, b = (AuditTrail(s, key=key, checkpoint_every=3, checkpoint_minutes=0) for s in (first, second))
    verdicts = []
    for s in (first, second, reader):  # each store opens its connection before the race
        await s.get(*HEAD)

    async def write(trail: AuditTrail, n: int) -> None:
        for i in range(n):
            await trail.append("call", "x", {"i": i})

    async def check(until: asyncio.Future[Any]) -> None:
        while not until.done():
            verdicts.append(await AuditTrail(reader, public_key=key.public).verify())

    writers = asyncio.ensure_future(asyncio.gather(write(a, 60), write(b, 60)))
    await check(writers)
    await writers
    verdicts.append(await AuditTrail(reader, public_key=key.public).verify())
    print(
        f"\n{len(verdicts)} verifications during 120 appends on {spec['backend']}: "
        f"{sum(not v.ok for v in verdicts)} reported a break"
    )
    assert all(v.ok for v in verdicts), [str(v) for v in verdicts if not v.ok]
    assert verdicts[-1].checked == 120 and len(verdicts) >= 2
    for s in (first, second, reader):
        await s.close()


async def test_a_bare_expected_hash_no_entry_has_is_reported(
    backend: tuple[dict[str, Any], str], tmp_path: Path
) -> None:
    setup = await a_trail(backend, tmp_path)
    store = open_spec(setup.spec)
    await rewrite_all(store, edit_at=9)
    await store.close()
    bare = setup.head.split(":")[1]
    code, printed = await cli("audit", "verify", "--store", setup.url, "--expect-head", bare)
    assert code == 1 and "no entry has the hash the expected head pins" in printed and "SEQ:HASH" in printed, printed
    code, printed = await cli("audit", "verify", "--store", setup.url, "--expect-head", f"0:{bare}")
    assert code == 2 and "write SEQ:HASH" in printed, printed


def _append_until_killed(spec: dict[str, Any], seed: bytes) -> None:
    """Process target: append signed entries as fast as it can, until it is killed."""

    async def run() -> None:
        store = open_spec(spec, max_size=2) if spec["backend"] == "postgres" else open_spec(spec)
        trail = AuditTrail(store, key=SigningKey.from_seed(seed), checkpoint_every=7, checkpoint_minutes=0)
        n = 0
        while True:
            await trail.append("call", "loop", {"n": n})
            n += 1

    asyncio.run(run())


@pytest.mark.slow
async def test_a_writer_killed_mid_append_leaves_a_trail_that_holds_with_every_checkpoint(
    backend: tuple[dict[str, Any], str],
) -> None:
    import multiprocessing
    import os
    import signal

    from milpa_chat.testing import eventually

    spec, url = backend
    seed = bytes(range(32))
    store = open_spec(spec)
    process = multiprocessing.get_context("spawn").Process(target=_append_until_killed, args=(spec, seed))
    process.start()

    async def written() -> bool:
        return len(await store.scan(COLLECTION)) >= 60

    await eventually(written, timeout=60, what="60 entries written by the other process")
    assert process.pid is not None
    os.kill(process.pid, signal.SIGKILL)
    await asyncio.to_thread(process.join, 10)
    assert process.exitcode == -signal.SIGKILL
    key = SigningKey.from_seed(seed)
    right_after = await AuditTrail(store, public_key=key.public).verify()
    # an append's entry, the head naming it and its checkpoint are one transaction: a kill leaves all or none
    assert right_after.ok, right_after
    await AuditTrail(store, key=key, checkpoint_every=7, checkpoint_minutes=0).append("call", "after", {})
    code, printed = await cli("audit", "verify", "--store", url, "--public-key", key.public.text())
    entries = await AuditTrail(store).entries()
    print(
        f"\nwriter SIGKILLed after {len(entries) - 1} entries on {spec['backend']}: right after, the trail held; "
        f"after one more append: {printed.strip()}"
    )
    assert code == 0 and f"holds: {len(entries)} entries" in printed, printed
    checkpoints = await AuditTrail(store).checkpoints()
    missed = set(range(7, len(entries) + 1, 7)) - {c.seq for c in checkpoints}
    assert not missed, missed  # each written with its entry, the killed writer's last one too
    await store.close()

"""``milpa-chat audit verify | export | show ID | checkpoint | keygen``: the hash-chained audit trail of a store.

``verify`` walks the chain and every lane (see ``AuditTrail(lane=...)``), checks each head against its last
entry and, given them, the exported signed checkpoints (``--checkpoints FILE`` with ``--public-key``) and a
head copied elsewhere (``--expect-head``). ``checkpoint`` exports the signed checkpoints kept in the store as
JSON lines (``--now`` first signs the current end of the chain and of every lane); ``keygen`` writes a new
signing key and prints its public key.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from milpa_chat.cli.errors import CliError
from milpa_chat.cli.store import open_cli_store
from milpa_chat.runtime.trail import AuditTrail
from milpa_chat.runtime.trail_checkpoints import Checkpoint, CheckpointError, parse_checkpoints, parse_expected_head
from milpa_chat.runtime.trail_keys import PUBLIC_KEY_ENV, PublicKey, SigningKey, TrailKeyError, generate_pem

__all__ = ["add_parser", "cmd_audit"]


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    common: Callable[[argparse.ArgumentParser], None] | None = None,
) -> None:
    p = sub.add_parser("audit", help="check, export or tell the audit trail kept in a store")
    p.add_argument("action", choices=["verify", "export", "show", "checkpoint", "keygen"])
    p.add_argument("id", nargs="?", help="with show: the approval id")
    p.add_argument("--checkpoints", metavar="FILE", help="verify: exported checkpoints to check the chain against")
    p.add_argument(
        "--public-key",
        metavar="KEY",
        help="verify: the public key of the checkpoints (base64 or hex, "
        f"or a file); default {PUBLIC_KEY_ENV}, else the signing key's",
    )
    p.add_argument("--expect-head", metavar="[SEQ:]HASH", help="verify: a head copied elsewhere earlier")
    p.add_argument(
        "--key-file", metavar="FILE", help="the signing key (default MILPA_AUDIT_KEY_FILE or MILPA_AUDIT_KEY)"
    )
    p.add_argument(
        "--out",
        metavar="FILE",
        help="checkpoint: write the JSON lines there, not to stdout; keygen: where to write the new key",
    )
    p.add_argument("--now", action="store_true", help="checkpoint: sign the current end first (needs the key)")
    if common is not None:
        common(p)  # --store and the others
    else:
        p.add_argument("--store", default=None, help="the store: a SQLite file, sqlite:///file.db, postgresql://...")


def _fail(message: str) -> Exception:
    return CliError(message)


def _signing_key(ns: argparse.Namespace) -> SigningKey | None:
    return SigningKey.from_file(ns.key_file) if ns.key_file else SigningKey.from_env()


def _public_key(ns: argparse.Namespace, key: SigningKey | None) -> PublicKey | None:
    if ns.public_key:
        return PublicKey.load(ns.public_key)
    return PublicKey.from_env() or (key.public if key is not None else None)


def _keygen(ns: argparse.Namespace) -> int:
    if not ns.out:
        raise _fail("audit keygen needs --out FILE: where to write the new signing key")
    path = Path(ns.out)
    pem, public = generate_pem()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise _fail(f"{path} exists already; choose another --out, or delete it if it is no longer used") from None
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    print(public.text())
    print(
        f"milpa-chat: wrote the signing key to {path} (keep it away from the store's writers); its public key "
        f"(id {public.id}) is on stdout",
        file=sys.stderr,
    )
    return 0


def _exported(ns: argparse.Namespace, trail: AuditTrail) -> list[Checkpoint]:
    """The checkpoints of ``--checkpoints FILE``, each signed by the public key (else a one-line error)."""
    if not ns.checkpoints:
        return []
    if trail.public_key is None:
        raise _fail(
            "verify --checkpoints needs the public key they were signed with: pass --public-key KEY "
            f"(or set {PUBLIC_KEY_ENV}); milpa-chat audit keygen printed it"
        )
    path = Path(ns.checkpoints)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise _fail(
            f"--checkpoints {path} does not exist; export them with milpa-chat audit checkpoint --out FILE"
        ) from None
    return parse_checkpoints(lines, str(path), trail.public_key)


async def _verify(ns: argparse.Namespace, trail: AuditTrail) -> int:
    checkpoints = _exported(ns, trail)
    expect = parse_expected_head(ns.expect_head) if ns.expect_head else None
    verdict = await trail.verify(checkpoints, expect=expect)
    print(verdict)
    return 0 if verdict.ok else 1


def _write(lines: list[str], out: str | None) -> None:
    if out:
        Path(out).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        print(f"milpa-chat: wrote {len(lines)} checkpoint(s) to {out}", file=sys.stderr)
    else:
        for line in lines:
            print(line)


async def _checkpoint(ns: argparse.Namespace, trail: AuditTrail) -> int:
    if ns.now:
        if trail.key is None:
            raise _fail(
                "audit checkpoint --now signs with the key: pass --key-file FILE or set "
                "MILPA_AUDIT_KEY_FILE (milpa-chat audit keygen --out FILE makes one)"
            )
        await trail.checkpoint()
    _write([c.to_line() for c in await trail.checkpoints()], ns.out)
    return 0


async def _show(ns: argparse.Namespace, trail: AuditTrail) -> int:
    entries = await trail.story(ns.id)
    if not entries:
        print(f"No trail entries about {ns.id}.")
        return 1
    for e in entries:
        when = dt.datetime.fromtimestamp(e.at, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        facts = ", ".join(f"{k}={v}" for k, v in e.fields.items() if v not in (None, ""))
        print(f"#{e.seq} {when} {e.kind}: {facts}")
    return 0


async def cmd_audit(ns: argparse.Namespace) -> int:
    if ns.action == "show" and not ns.id:
        print(
            "milpa-chat: audit show needs the approval id: milpa-chat audit show <id> "
            "(milpa-chat approvals --all lists them)",
            file=sys.stderr,
        )
        return 2
    if ns.action == "keygen":
        return _keygen(ns)
    try:
        key = _signing_key(ns)
        public = _public_key(ns, key)
    except TrailKeyError as exc:
        raise _fail(str(exc)) from None

    store = open_cli_store(getattr(ns, "store", None))
    try:
        trail = AuditTrail(store, key=key, public_key=public)
        if ns.action == "verify":
            return await _verify(ns, trail)
        if ns.action == "checkpoint":
            return await _checkpoint(ns, trail)
        if ns.action == "export":
            for line in trail.export_lines(await trail.entries()):
                print(line)
            for lane, entry in await trail.lane_entries():  # each lane's entries, named
                print(json.dumps({**entry.to_dict(), "lane": lane}, sort_keys=True, ensure_ascii=False))
            return 0
        return await _show(ns, trail)
    except (CheckpointError, TrailKeyError) as exc:
        raise _fail(str(exc)) from None
    finally:
        await store.close()

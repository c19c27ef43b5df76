"""``milpa-chat grants``: list, show, suspend, lift, revoke and sign from the shell, on a SQLite file."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from milpa_chat.cli import CliError
from milpa_chat.cli.grants import add_parsers, cmd_grants
from milpa_chat.store.sqlite import SqliteStore
from tests.grants.house import APPROVER, REQUESTER, grant, house, measured, signed

CLEAN = {"archive": "clean.tgz", "channel": "stable"}


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="milpa-chat")
    sub = parser.add_subparsers(dest="command")

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--store", default=argparse.SUPPRESS)
        p.add_argument("--as", dest="as_", default=argparse.SUPPRESS)
        p.add_argument("--identities", default=argparse.SUPPRESS)
        p.add_argument("--scopes", default=argparse.SUPPRESS)

    add_parsers(sub, common)
    return parser.parse_args(["grants", *argv])


async def run(db: Path, *argv: str) -> int:
    return await cmd_grants(parse(*argv, "--store", str(db)))


async def test_the_shell_lists_shows_suspends_lifts_and_revokes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "store.db"
    store = SqliteStore(db)
    registry, desk = house(store)
    await measured(registry, "clean.tgz")
    grant_id = await signed(desk)
    assert (await registry.call("release_publish", CLEAN, REQUESTER)).meta.get("standing_grant") == grant_id

    assert await run(db, "list") == 0
    assert f"{grant_id} · in_force · 1 use · release:publish for telegram:100" in capsys.readouterr().out
    assert await run(db, "show", grant_id) == 0
    shown = capsys.readouterr().out
    assert "signed by Sara via telegram" in shown and grant().to_json() in shown

    assert await run(db, "suspend", grant_id, "--as", "ops", "--scopes", "grants:sign", "--note", "audit") == 0
    assert "suspended" in capsys.readouterr().out
    stopped = await registry.call("release_publish", CLEAN, REQUESTER)  # the bot's process sees it at once
    assert stopped.code == "FORBIDDEN" and "suspended: audit" in (stopped.error or "")

    assert await run(db, "lift", grant_id, "--as", "ops", "--scopes", "grants:sign") == 0
    asked = capsys.readouterr().out
    change = asked.split("milpa-chat grants sign ")[1].split()[0]
    with pytest.raises(CliError, match="four-eyes"):
        await run(db, "sign", change, "--as", "ops", "--scopes", "grants:sign")
    assert await run(db, "sign", change, "--as", "lead", "--scopes", "grants:sign") == 0
    assert "in_force" in capsys.readouterr().out
    assert (await registry.call("release_publish", CLEAN, REQUESTER)).meta.get("standing_grant") == grant_id

    assert await run(db, "revoke", grant_id, "--as", "lead", "--scopes", "grants:sign") == 0
    assert (await desk.get(grant_id)).state == "revoked"  # type: ignore[union-attr]
    assert await run(db, "show", grant_id) == 0
    history = capsys.readouterr().out
    assert all(
        f"  {a}  by" in history.replace("UTC", "") or a in history for a in ("sign", "suspend", "lift", "revoke")
    )
    await store.close()


async def test_the_shell_names_what_is_wrong_and_how_to_fix_it(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    store = SqliteStore(db)
    _, desk = house(store)
    grant_id = await signed(desk)
    with pytest.raises(CliError, match="needs the person who decides: add --as"):
        await run(db, "suspend", grant_id)
    with pytest.raises(CliError, match="grants:sign"):
        await run(db, "suspend", grant_id, "--as", "mallory")
    with pytest.raises(CliError, match="no standing grant 'nope'"):
        await run(db, "show", "nope")
    with pytest.raises(CliError, match="cannot be lifted"):
        await run(db, "lift", grant_id, "--as", "ops", "--scopes", "grants:sign")
    await store.close()


async def test_a_signature_decided_with_approvals_approve_is_written_into_its_grant(tmp_path: Path) -> None:
    from milpa_chat.runtime.approvals import ApprovalDesk
    from milpa_chat.runtime.context import ToolContext

    db = tmp_path / "store.db"
    store = SqliteStore(db)
    _, desk = house(store)
    _, approval = await desk.draft(grant(), APPROVER, via="slack")
    other = SqliteStore(db)  # another process: no grant desk listening
    lead = ToolContext("cli:lead", "cli", ("grants:sign",), extra={"user_name": "lead"})
    await ApprovalDesk(other).decide(approval.id, "approve", lead, via="cli")
    await other.close()
    [record] = await desk.listing()
    assert record.state == "in_force" and record.signer == "lead"
    await store.close()


def console(db: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "milpa-chat"), "grants", *argv, "--store", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_the_console_script_suspends_in_another_process_and_the_bot_sees_it(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    store = SqliteStore(db)
    registry, desk = house(store)
    await measured(registry, "clean.tgz")
    grant_id = await signed(desk)
    await registry.call("release_publish", CLEAN, REQUESTER)
    await store.close()

    listed = console(db, "list")
    assert listed.returncode == 0 and f"{grant_id} · in_force · 1 use" in listed.stdout
    refused = console(db, "suspend", grant_id)
    assert refused.returncode == 2 and "add --as PRINCIPAL" in refused.stderr
    done = console(db, "suspend", grant_id, "--as", "ops", "--scopes", "grants:sign", "--note", "checking")
    assert done.returncode == 0, done.stderr

    again = SqliteStore(db)  # the bot, restarted on the same file
    registry2, _ = house(again)
    stopped = await registry2.call("release_publish", CLEAN, REQUESTER)
    assert stopped.code == "FORBIDDEN" and "suspended: checking" in (stopped.error or "")
    await again.close()


async def test_the_shell_drafts_a_grant_that_supersedes_another_and_signing_replaces_it(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    store = SqliteStore(db)
    _, desk = house(store)
    first = await signed(desk)
    text = tmp_path / "next.json"
    text.write_text(grant(id="release-stable-2", supersedes=(first,)).to_json(), encoding="utf-8")
    bad = tmp_path / "bad.json"
    bad.write_text('{"id": "x", "note": 1}', encoding="utf-8")
    with pytest.raises(CliError, match="the grant does not read"):
        await run(db, "draft", str(bad), "--as", "ops")
    assert await run(db, "draft", str(text), "--as", "ops") == 0
    [(change, action)] = (await desk.get("release-stable-2")).pending.items()  # type: ignore[union-attr]
    assert action == "sign" and (await desk.get(first)).state == "in_force"  # type: ignore[union-attr]
    assert await run(db, "sign", change, "--as", "lead", "--scopes", "grants:sign") == 0
    assert (await desk.get(first)).state == "superseded"  # type: ignore[union-attr]
    assert (await desk.get("release-stable-2")).state == "in_force"  # type: ignore[union-attr]
    await store.close()

"""A payment requested in one ``milpa-chat`` run is approved by another person in a second run, on one store."""

from __future__ import annotations

import re
import subprocess

from tests.cli.support import SCRIPT, Shell

ALICE = ("--identities", "ids.toml", "--as", "alice")
BOB = ("--identities", "ids.toml", "--as", "bob")


def _request(shell: Shell, *store: str, **env: str) -> str:
    asked = shell.run(
        *store, *ALICE, "call", "pay", "--tools", "shop:tools", "--args", '{"to": "ACME", "amount": 16}', **env
    )
    assert asked.returncode == 0, asked.stderr
    assert "Waiting for approval" in asked.stdout and "Four eyes:        yes" in asked.stdout
    found = re.search(r"milpa-chat approvals approve ([0-9a-f]{32}) --as APPROVER(.*) \(or reject\)", asked.stdout)
    assert found, asked.stdout
    assert found.group(2) == " --tools shop:tools" + (" --store shop.db" if store else "")  # the same place
    return found.group(1)


def test_requested_in_one_run_approved_by_another_principal_in_the_next_and_run_exactly_once(shell: Shell) -> None:
    store = ("--store", "shop.db")
    request_id = _request(shell, *store)
    assert shell.ledger() == []  # nothing runs before a person approves

    listed = shell.run("approvals", *store)
    assert listed.returncode == 0 and request_id in listed.stdout and "pending" in listed.stdout
    assert "by alice, 0 of 1 approvals" in listed.stdout

    own = shell.run(
        "approvals", "approve", request_id, *store, *ALICE, "--scopes", "payments:approve", "--tools", "shop:tools"
    )  # even holding the approver scope, the requester cannot approve
    assert own.returncode == 2 and own.stdout == ""
    assert own.stderr.count("\n") == 1 and "your own request (four-eyes rule)" in own.stderr
    assert "--as" in own.stderr and shell.ledger() == []

    # the second person, with the store from the environment this time
    approved = shell.run(
        "approvals", "approve", request_id, *BOB, "--tools", "shop:tools", "--note", "invoice 7", MILPA_STORE="shop.db"
    )
    assert approved.returncode == 0, approved.stderr
    assert "Approved — running it now." in approved.stdout and "Paid:   ACME" in approved.stdout
    assert f"Approval {request_id} is now executed." in approved.stdout
    assert shell.ledger() == ["ACME 16.0"]

    again = shell.run(
        "approvals", "approve", request_id, *store, "--as", "carol", "--identities", "ids.toml", "--tools", "shop:tools"
    )
    assert again.returncode == 2 and "already approved and carried out" in again.stderr
    assert shell.ledger() == ["ACME 16.0"]  # exactly once

    shown = shell.run("approvals", "show", request_id, *store)
    assert shown.returncode == 0, shown.stderr
    assert f"{request_id}  verification of pay: executed" in shown.stdout
    assert "requested:  by alice (cli:alice, via cli)" in shown.stdout
    assert "approved:   by bob (cli:bob, via cli)" in shown.stdout and "— invoice 7" in shown.stdout
    assert "runs:       1 time(s)" in shown.stdout and '"to": "ACME"' in shown.stdout

    story = shell.run("audit", "show", request_id, *store)
    assert story.returncode == 0, story.stderr
    kinds = [line.split()[4].rstrip(":") for line in story.stdout.splitlines()]  # "#N date time UTC kind:"
    assert kinds == ["requested", "decided", "started", "result"]
    assert "by=cli:bob" in story.stdout and "requester=cli:alice" in story.stdout and "ok=True" in story.stdout
    verified = shell.run("audit", "verify", *store)
    assert verified.returncode == 0 and "The audit trail holds" in verified.stdout
    assert shell.temporary_files() == []


def test_a_rejected_request_never_runs_and_an_approver_needs_the_scope(shell: Shell) -> None:
    request_id = _request(shell, "--store", "shop.db")
    guest = shell.run("approvals", "approve", request_id, "--store", "shop.db", "--as", "dave", "--tools", "shop:tools")
    assert guest.returncode == 2 and guest.stderr.count("\n") == 1
    assert "it needs one of these scopes: payments:approve" in guest.stderr and "cli:dave" in guest.stderr
    rejected = shell.run("approvals", "reject", request_id, "--store", "shop.db", *BOB, "--note", "no invoice")
    assert rejected.returncode == 0 and "Rejected — nothing was done." in rejected.stdout
    late = shell.run(
        "approvals",
        "approve",
        request_id,
        "--store",
        "shop.db",
        "--as",
        "carol",
        "--scopes",
        "payments:approve",
        "--tools",
        "shop:tools",
    )
    assert late.returncode == 2 and "already rejected by bob" in late.stderr
    assert shell.ledger() == []
    assert "No open approvals." in shell.run("approvals", "list", "--store", "shop.db").stdout
    assert request_id in shell.run("approvals", "list", "--all", "--store", "shop.db").stdout


def test_the_default_store_persists_between_runs_and_is_announced_once(shell: Shell) -> None:
    first = shell.run(*ALICE, "call", "pay", "--tools", "shop:registry", "--args", '{"to": "Bolt", "amount": 3}')
    assert first.returncode == 0, first.stderr
    where = shell.root / "data" / "milpa-chat" / "store.db"
    assert first.stderr.strip() == (
        f"milpa-chat: keeping state in {where} (created now; --store PATH or MILPA_STORE to use another)"
    )
    request_id = re.findall(r"approvals show ([0-9a-f]{32})", first.stdout)[0]
    approved = shell.run("approvals", "approve", request_id, *BOB, "--tools", "shop:registry")
    assert approved.returncode == 0 and approved.stderr == ""  # announced only when it was created
    assert shell.ledger() == ["Bolt 3.0"]
    assert shell.temporary_files() == []


def test_the_deprecated_decide_says_so_and_runs_a_command_line_request_once(shell: Shell) -> None:
    request_id = _request(shell, "--store", "shop.db")
    decided = shell.run("decide", request_id, "approve", "--store", "shop.db", "--tools", "shop:tools")
    assert decided.returncode == 0, decided.stderr
    assert "decide is deprecated; use milpa-chat approvals approve|reject ID --as PRINCIPAL" in decided.stderr
    assert "Approved — running it now." in decided.stdout and shell.ledger() == ["ACME 16.0"]
    shown = shell.run("approvals", "show", request_id, "--store", "shop.db").stdout
    assert "(local-shell, via cli)" in shown and "runs:       1 time(s)" in shown


def test_two_approvers_at_the_same_moment_run_it_once(shell: Shell) -> None:
    request_id = _request(shell, "--store", "shop.db")
    both = [
        subprocess.Popen(
            [
                str(SCRIPT),
                "approvals",
                "approve",
                request_id,
                "--store",
                "shop.db",
                "--identities",
                "ids.toml",
                "--as",
                who,
                "--tools",
                "shop:tools",
            ],
            cwd=shell.work,
            env=shell.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for who in ("bob", "carol")
    ]
    outcomes = sorted(
        (p.wait(timeout=60), p.stdout.read() if p.stdout else "", p.stderr.read() if p.stderr else "") for p in both
    )
    print("two approvers at once:", [code for code, _, _ in outcomes])
    assert [code for code, _, _ in outcomes] == [0, 2]
    assert "Approved — running it now." in outcomes[0][1] and "already approved" in outcomes[1][2]
    assert shell.ledger() == ["ACME 16.0"]


def test_the_approved_run_is_authorized_with_the_requesters_scopes_of_now(shell: Shell) -> None:
    request_id = _request(shell, "--store", "shop.db")
    now = '[roles]\nmanager = ["payments:approve"]\n\n[users]\n"cli:bob" = ["manager"]\n'  # alice is no clerk now
    (shell.work / "now.toml").write_text(now, encoding="utf-8")
    approved = shell.run(
        "approvals",
        "approve",
        request_id,
        "--store",
        "shop.db",
        "--identities",
        "now.toml",
        "--as",
        "bob",
        "--tools",
        "shop:tools",
    )
    assert approved.returncode == 1, approved.stderr
    assert "Missing required scope for tool 'pay'" in approved.stdout and shell.ledger() == []
    shown = shell.run("approvals", "show", request_id, "--store", "shop.db").stdout
    assert f"{request_id}  verification of pay: failed" in shown

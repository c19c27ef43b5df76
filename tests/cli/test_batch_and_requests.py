"""``milpa-chat batch`` and ``milpa-chat request`` as a user runs them: three payments asked in one run are approved
together by another person in the next (each once), a question and a comment are kept and audited."""

from __future__ import annotations

import re

from tests.cli.support import Shell

ALICE = ("--identities", "ids.toml", "--as", "alice")
BOB = ("--identities", "ids.toml", "--as", "bob")
STORE = ("--store", "shop.db")


def _request(shell: Shell, amount: int) -> str:
    asked = shell.run(
        *STORE, *ALICE, "call", "pay", "--tools", "shop:tools", "--args", f'{{"to": "ACME", "amount": {amount}}}'
    )
    assert asked.returncode == 0, asked.stderr
    found = re.search(r"milpa-chat approvals approve ([0-9a-f]{32})", asked.stdout)
    assert found, asked.stdout
    return found.group(1)


def test_a_batch_from_the_command_line_runs_each_request_once(shell: Shell) -> None:
    ids = [_request(shell, amount) for amount in (10, 20, 30)]
    mine = shell.run("batch", "approve", *ids, *STORE, *ALICE, "--scopes", "payments:approve", "--tools", "shop:tools")
    assert mine.returncode == 1 and mine.stdout.count("own request") == 3 and shell.ledger() == []

    asked = shell.run("request", "ask", ids[0][:8], "which", "invoice?", *STORE, *BOB)
    assert asked.returncode == 0 and "Asked alice" in asked.stdout, asked.stderr
    answered = shell.run("request", "answer", ids[0][:8], "invoice", "7", *STORE, *ALICE)
    assert answered.returncode == 0, answered.stderr
    refused = shell.run("request", "answer", ids[0][:8], "again", *STORE, *BOB)
    assert refused.returncode == 2 and "Only alice" in refused.stderr

    done = shell.run("batch", "approve", *ids, *STORE, *BOB, "--tools", "shop:tools", "--note", "invoices 7-9")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("executed") == 3 and "3 of 3 decided." in done.stdout
    assert sorted(shell.ledger()) == ["ACME 10.0", "ACME 20.0", "ACME 30.0"]
    again = shell.run("batch", "approve", *ids, *STORE, *BOB, "--tools", "shop:tools")
    assert again.returncode == 1 and len(shell.ledger()) == 3  # each ran once

    story = shell.run("audit", "show", ids[0], *STORE)
    kinds = [line.split()[4].rstrip(":") for line in story.stdout.splitlines()]
    assert kinds[:3] == ["requested", "asked", "answered"] and "decided" in kinds and "result" in kinds
    assert "via=cli/batch" in story.stdout
    assert shell.run("audit", "verify", *STORE).returncode == 0

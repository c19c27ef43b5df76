"""docs/cli.md as a reader follows it: its shop.py and identities.toml, its commands in two shells, its errors."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tests.cli.support import Shell

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"^```{kind}\n(.*?)^```$", PAGE, flags=re.MULTILINE | re.DOTALL)


def _run_block(shell: Shell, block: str, env: dict[str, str], request_id: str = "") -> list[str]:
    outputs = []
    for line in block.strip().splitlines():
        words = shlex.split(line)
        if words[0].startswith("ID="):
            continue  # the shell reads the id from the list; this test already knows it
        if words[0] == "export":
            env.update(dict(w.split("=", 1) for w in words[1:]))
            continue
        assert words[0] == "milpa-chat", line
        done = shell.run(*[request_id if w == "$ID" else w for w in words[1:]], **env)
        assert done.returncode == 0, (line, done.stderr)
        outputs.append(done.stdout)
    return outputs


def test_the_page_walkthrough_runs_as_written(shell: Shell) -> None:
    (python,) = _blocks("python")
    (toml,) = _blocks("toml")
    (shop, identities) = (shell.work / "shop.py", shell.work / "identities.toml")
    shop.write_text(python, encoding="utf-8")
    identities.write_text(toml, encoding="utf-8")
    ask, approve = _blocks("sh")
    env: dict[str, str] = {}
    asked, listed = _run_block(shell, ask, env)
    assert "Waiting for approval" in asked and "Four eyes:        yes" in asked and shell.ledger() == []
    request_id = re.findall(r"^([0-9a-f]{32})  pending", listed, flags=re.MULTILINE)[0]

    approved, shown, story = _run_block(shell, approve, env, request_id)
    assert "Approved — running it now." in approved and f"Approval {request_id} is now executed." in approved
    assert shell.ledger() == ["ACME 16.0"]
    assert "approved:   by bob (cli:bob, via cli)" in shown and "runs:       1 time(s)" in shown
    assert [line.split()[4] for line in story.splitlines()] == ["requested:", "decided:", "started:", "result:"]

    errors = PAGE.split("## Errors", 1)[1]
    (examples,) = re.findall(r"^```text\n(.*?)^```$", errors, flags=re.MULTILINE | re.DOTALL)[:1]
    lines = examples.strip().splitlines()
    for command, said in zip(lines[::2], lines[1::2], strict=True):
        words = [request_id if w == "5f0c…" else w for w in shlex.split(command.removeprefix("$ "))]
        done = shell.run(*words[1:], **env)
        assert done.returncode == 2 and done.stderr.strip() == said.replace("5f0c…", request_id), command
    assert shell.temporary_files() == []

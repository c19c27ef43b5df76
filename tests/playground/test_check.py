"""``python -m milpa_chat.playground --check``: the scripted tour headless, in a process of its own, on real ports."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STEPS = (
    "A read",
    "A validation error",
    "A denial names who you are and the missing scope",
    "The agent turns a plain request into tool calls (scripted model, no key)",
    "A confirm round trip",
    "A payment approved in Slack with a typed reason, the Telegram copies edited",
    "Edit before approve in a Telegram reply prompt; the editor may not approve",
    "Edit in the Slack modal, approved in Telegram with a typed reason",
    "A forged tap refused",
    "A reminder, then an escalation",
    "The approvers' figures",
    "An expiry",
)


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL")}
    env["TMPDIR"] = str(tmp_path)  # the temporary store goes here: the test sees that it is removed
    return env


def test_check_plays_every_step_of_the_tour_and_leaves_nothing_behind(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "milpa_chat.playground", "--check"],
        cwd=ROOT,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    print(run.stdout)
    lines = run.stdout.splitlines()
    assert run.returncode == 0, run.stdout + run.stderr
    for number, title in enumerate(STEPS, 1):
        assert any(line.startswith(f"ok   {number}. {title}") for line in lines), (title, run.stdout)
    assert "12 of 12 steps passed" in lines[-1]
    assert "notes:write" in run.stdout and "You are telegram:1003" in run.stdout  # the denial: scope and who
    assert "maria via slack" in run.stdout.lower() and "Nothing was done" in run.stdout
    assert "amount: 300.0 → 250.0" in run.stdout and "amount: 250.0 → 200.0" in run.stdout  # both edits, shown
    assert "four-eyes" in run.stdout and "Paid 200.00 EUR to ACME" in run.stdout  # the editor refused, then paid
    assert "escalation approvers" in run.stdout  # the requester is told where it went
    assert "Maria (telegram:2001): 1 decision, 100% approved" in run.stdout
    assert "search_notes and delete_note" in run.stdout and "the agent: Done: Deleted note" in run.stdout  # no key
    assert list(tmp_path.iterdir()) == []  # the SQLite store's temporary directory is gone


def test_bad_tools_option_is_a_clear_error(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "milpa_chat.playground", "--check", "--tools", "no_such_pkg:Tools"],
        cwd=ROOT,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2, run.stdout + run.stderr
    assert "--tools no_such_pkg:Tools: cannot import 'no_such_pkg'" in run.stderr
    assert "Traceback" not in run.stderr and list(tmp_path.iterdir()) == []


def test_serves_until_ctrl_c_and_stops_cleanly(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "milpa_chat.playground", "--port", "0"],
        cwd=ROOT,
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("milpa-chat playground: open http://127.0.0.1:"), first
        url = first.split("open ", 1)[1].split()[0]
        with urllib.request.urlopen(url + "/api/state", timeout=10) as resp:
            assert resp.status == 200
        assert len(list(tmp_path.iterdir())) == 1  # the running store
        proc.send_signal(signal.SIGINT)
        started = time.monotonic()
        assert proc.wait(timeout=20) == 0
        print(f"stopped {time.monotonic() - started:.1f} s after Ctrl-C")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert list(tmp_path.iterdir()) == []


def test_without_the_playground_extra_it_says_what_to_install(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['starlette'] = None\n"  # as if starlette were not installed
        "from milpa_chat.playground.cli import main\nraise SystemExit(main(['--check']))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 2 and 'pip install "milpa-chat[playground]"' in run.stderr, run.stderr
    assert "Traceback" not in run.stderr

"""Every server the kit starts refuses a port another program holds, and an unreachable database, with one line
naming the fix and a non-zero exit status — no traceback, no "listening on" first. Real commands, real sockets."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_IDENTITIES = REPO / "bots" / "identities.example.toml"


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port another program listens on."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TELEGRAM_", "SLACK_", "MILPA_"))}
    return {
        **env,
        "PYTHONPATH": str(REPO),
        "MILPA_STORE": str(tmp_path / "a.db"),
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        **extra,
    }


def _run(args: list[str], env: dict[str, str], cwd: Path) -> tuple[int, list[str], str]:
    done = subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=90)
    lines = [
        line for line in done.stderr.splitlines() if line.strip() and " INFO " not in line and " WARNING " not in line
    ]  # the example bots' log lines of their start-up (store, identities)
    return done.returncode, lines, done.stdout + done.stderr


def _servers(port: int, tmp_path: Path) -> dict[str, tuple[list[str], dict[str, str], str]]:
    (tmp_path / "tokens.json").write_text('{"tok-0123456789abcdef": {"principal": "mcp:a", "scopes": []}}')
    return {
        "telegram webhook": (
            ["-m", "bots.telegram_assistant"],
            _env(
                tmp_path,
                TELEGRAM_TOKEN="123456:abc",
                TELEGRAM_WEBHOOK_URL="https://bot.example/telegram",
                TELEGRAM_WEBHOOK_PORT=str(port),
                TELEGRAM_WEBHOOK_LISTEN="127.0.0.1",
                MILPA_IDENTITIES=str(EXAMPLE_IDENTITIES),
            ),
            "error: ",
        ),
        "slack server": (
            ["-m", "bots.slack_assistant"],
            _env(
                tmp_path, SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET="secret", PORT=str(port), HOST="127.0.0.1"
            ),
            "error: ",
        ),
        "mcp --http": (
            [
                "-m",
                "milpa_chat.cli",
                "mcp",
                "--http",
                str(port),
                "--host",
                "127.0.0.1",
                "--tokens",
                str(tmp_path / "tokens.json"),
            ],
            _env(tmp_path),
            "milpa-chat: ",
        ),
        "playground": (
            ["-m", "milpa_chat.cli", "playground", "--port", str(port), "--host", "127.0.0.1"],
            _env(tmp_path),
            "milpa-chat playground: ",
        ),
    }


@pytest.mark.parametrize("server", ["telegram webhook", "slack server", "mcp --http", "playground"])
def test_a_port_another_program_holds_is_one_line_naming_the_fix(server: str, held_port: int, tmp_path: Path) -> None:
    args, env, prefix = _servers(held_port, tmp_path)[server]
    code, lines, out = _run(args, env, tmp_path)
    assert code == 2, out
    assert lines == [lines[0]] and "Traceback" not in out and "listening on" not in out and " at http" not in out, out
    option = {
        "telegram webhook": "TELEGRAM_WEBHOOK_PORT",
        "slack server": "PORT",
        "mcp --http": "--http PORT",
        "playground": "--port",
    }[server]
    assert lines[0].startswith(
        f"{prefix}port {held_port} on 127.0.0.1 is already in use by another program: "
        f"stop it, or choose another port with {option}"
    ), lines


@pytest.mark.parametrize("server", ["telegram webhook", "slack server"])
def test_an_unreachable_postgresql_is_one_line_naming_the_fix(server: str, tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    args, env, prefix = _servers(0, tmp_path)[server]
    env["MILPA_STORE"] = f"postgresql://nobody@127.0.0.1:{closed}/nothing"
    env.pop("TELEGRAM_WEBHOOK_URL", None)
    code, lines, out = _run(args, env, tmp_path)
    assert code == 2 and "Traceback" not in out, out
    assert len(lines) == 1, out
    assert lines[0].startswith(f"{prefix}cannot connect to PostgreSQL nobody@127.0.0.1:{closed}"), lines
    assert lines[0].endswith(
        "Check that the server is running and that the DSN (postgresql://user@host:port/dbname) is right."
    ), lines

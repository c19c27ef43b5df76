"""Installing and configuring the Telegram adapter: lazy imports, the missing-extra hint, configuration errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bots.telegram_assistant import EXAMPLE_IDENTITIES, main
from milpa_chat.bots import TelegramBot
from milpa_chat.chat import ChatUser, Identities
from milpa_chat.store import MemoryStore

from .telegram_support import make_assistant

ROOT = Path(__file__).resolve().parents[2]


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          check=False)  # fmt: skip


def test_importing_the_bots_package_imports_no_chat_sdk() -> None:
    done = run_python(
        "import sys, milpa_chat.bots\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'telegram', 'slack_bolt', 'slack_sdk'}))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_missing_telegram_package_names_the_install_command() -> None:
    done = run_python(
        "import sys\nsys.modules['telegram'] = None  # as if python-telegram-bot were not installed\n"
        "from milpa_chat.bots import TelegramBot"
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "milpa_chat.errors.MissingExtraError: TelegramBot needs the 'telegram' package, which is not "
        'installed. Install it with: pip install "milpa-chat[telegram]"'
    )


def test_the_runnable_assistant_says_which_setting_is_missing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main({}) == 2
    err = capsys.readouterr().err
    assert "TELEGRAM_TOKEN is not set" in err and "@BotFather" in err
    assert main({"TELEGRAM_TOKEN": "not-a-token"}) == 2
    assert "does not look like a bot token" in capsys.readouterr().err
    assert main({"TELEGRAM_TOKEN": "1:x", "MILPA_SWEEP_INTERVAL": "soon"}) == 2
    assert "MILPA_SWEEP_INTERVAL='soon' is not a float" in capsys.readouterr().err
    assert main({"TELEGRAM_TOKEN": "1:x", "MILPA_IDENTITIES": "/nowhere/ids.toml", "MILPA_STORE": "memory://"}) == 2
    assert "identity file /nowhere/ids.toml does not exist" in capsys.readouterr().err


def test_the_example_identities_give_writers_and_managers_their_scopes() -> None:
    ids = Identities.from_toml(EXAMPLE_IDENTITIES)
    assert "payments:send" in ids.scopes_for("telegram", ChatUser("111111111"))
    assert "payments:approve" in ids.scopes_for("telegram", ChatUser("222222222"))
    assert ids.scopes_for("telegram", ChatUser("5")) == ("notes:read",)
    assert ids.approver_chats("telegram") == ("-1001234567890",)


def test_bad_tokens_and_webhook_secrets_are_refused_with_the_rule() -> None:
    assistant, _ = make_assistant(MemoryStore())
    with pytest.raises(ValueError, match="needs the bot token @BotFather gave you"):
        TelegramBot(assistant, "")
    with pytest.raises(ValueError, match=r"webhook_secret must be 1-256 characters of A-Z, a-z, 0-9, '_' and '-'"):
        TelegramBot(assistant, "123:abc", webhook_secret="has spaces")
    bot = TelegramBot(assistant, "123:abc", "http://127.0.0.1:9/bot")
    assert bot.application.bot.base_url == "http://127.0.0.1:9/bot123:abc"
    assert bot.application.bot.base_file_url == "http://127.0.0.1:9/file/bot123:abc"
    assert assistant.transports["telegram"] is bot.transport
    tuned = TelegramBot(assistant, "123:abc", configure=lambda builder: builder.read_timeout(7.0))
    assert tuned.application.bot.request.read_timeout == 7.0

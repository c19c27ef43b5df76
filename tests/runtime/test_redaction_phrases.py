"""Secrets introduced by words in plain sentences are masked; the words stay, ordinary prose is kept."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from milpa_chat import ToolContext
from milpa_chat.runtime.audit import AuditLogger
from milpa_chat.runtime.redaction import REDACTED, mask_text, redact

M = REDACTED

MASKED = [
    ("my password is rifFCI8mQ2", f"my password is {M}"),
    ("Password: hunter2", f"Password: {M}"),
    ("password=X9y!", f"password={M}"),
    ("pwd Secr3t!x", f"pwd {M}"),
    ("the PIN is 1234", f"the PIN is {M}"),
    ("pin code: 1234", f"pin code: {M}"),
    ("PIN number is 0042, thanks", f"PIN number is {M}, thanks"),
    ("PIN 1234", f"PIN {M}"),
    ("api key is abcdef", f"api key is {M}"),
    ("API-key: Zk2abc", f"API-key: {M}"),
    ("my apikey would be Q9ww-a", f"my apikey would be {M}"),
    ("token aB3dEf9hQ", f"token {M}"),
    ("the access token was 'abc'", f"the access token was '{M}'"),
    ("secret is sauce", f"secret is {M}"),
    ("Our secrets are xyzzy", f"Our secrets are {M}"),
    ("passphrase 'correct horse battery staple'", f"passphrase '{M}'"),
    ('passphrase is "correct horse battery staple".', f'passphrase is "{M}".'),
    ("credentials: admin/hunter2", f"credentials: {M}"),
    ("my ssn is 123-45-6789.", f"my ssn is {M}."),
    ("the password for alice is hunter2!", f"the password for alice is {M}!"),
    ("the password for the db is s3cr3t", f"the password for the db is {M}"),
    ("the password was changed to Xy99zz yesterday", f"the password was changed to {M} yesterday"),
    ("my password is “sésame9” ok", f"my password is “{M}” ok"),
    ("MY PASSWORD IS HUNTER", f"MY PASSWORD IS {M}"),
    ("the otp is 771204; the cvv is 123", f"the otp is {M}; the cvv is {M}"),
    ("passwords are Tr0ub4dor and x", f"passwords are {M} and x"),
    ("dbpassword is pg", f"dbpassword is {M}"),
]


@pytest.mark.parametrize(("text", "expected"), MASKED)
def test_a_value_introduced_by_a_secret_word_is_masked_and_the_words_stay(text: str, expected: str) -> None:
    assert mask_text(text) == expected


KEPT = [
    "reset password for alice",
    "Reset the password for alice, then tell her",
    "token bucket",
    "the token bucket refills every second",
    "the PIN pad is broken",
    "the PIN pad",
    "pin numpy==1.26.4 in requirements",
    "password is required",
    "Password is too short",
    "the password is incorrect",
    "password was changed yesterday",
    "the token is expired",
    "your api key is missing",
    "password: must be at least 8 characters",
    "password is 8 characters long",
    "number of tokens is 5000",
    "tokens used: 500",
    "the secret santa list",
    "top secret 2024 plans",
    "Unexpected token } in JSON at position 7",
    "unexpected token 'if'",
    "the monkey is tired",
    "the keyboard is 8 years old",
    "an opinion is 1234 words long",
    "password reset link sent to ana",
    "the passenger is A1234",
    "password policy is strict",
    "pwd",
    "my password is",
    "TelegramBot needs the bot token @BotFather gave you",
    "Telegram rejected the bot token (TELEGRAM_TOKEN): check it",
    "webhook_secret must be 1-256 characters of A-Z, a-z, 0-9",
    "Confirm tokens are bound to the principal",
    "the token was used once",
    "milpa-chat mcp --http 8765 --tokens tokens.json",
    "* **Bot token scopes**: `commands`, `chat:write`",
    "BearerTokens needs at least one token -> McpCaller entry",
]


@pytest.mark.parametrize("text", KEPT)
def test_ordinary_sentences_about_secrets_are_kept(text: str) -> None:
    assert mask_text(text) == text


def test_a_value_masked_by_another_rule_is_not_masked_twice() -> None:
    assert mask_text("token Bearer abcdefgh12345678 ok") == f"token Bearer {M} ok"
    assert mask_text("my token xoxb-1234567890-abcdefghijkl") == f"my token {M}"
    assert mask_text("the token: ghp_abcdefghijklmnopqrstuvwxyz0123") == f"the token: {M}"
    assert mask_text(f"token {M} ok") == f"token {M} ok"


def test_sentences_are_masked_at_any_depth_and_beside_other_forms() -> None:
    value = {"query": "my password is rifFCI8m", "items": [{"note": "the PIN is 4321"}, ("pwd Hunt3r2!",)],
             "log": "curl -H 'Authorization: Bearer abcdefgh12345678' and my api key is Zz9-Kq"}  # fmt: skip
    assert redact(value) == {
        "query": f"my password is {M}",
        "items": [{"note": f"the PIN is {M}"}, [f"pwd {M}!"]],
        "log": f"curl -H 'Authorization: {M}' and my api key is {M}",
    }


def test_the_audit_line_of_a_call_shows_the_sentence_without_the_secret() -> None:
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    logger = logging.getLogger("milpa_chat.audit.test_phrases")
    logger.propagate, logger.handlers = False, [Collect()]
    logger.setLevel(logging.INFO)
    AuditLogger(logger).call(ToolContext.cli(), "search", {"query": "my password is rifFCI8m…"}, True, None, 2.0)
    assert len(lines) == 1 and "rifFCI8m" not in lines[0] and f"my password is {M}" in lines[0], lines


def test_the_examples_of_the_docs_hold() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "runtime.md").read_text(encoding="utf-8")
    [block] = [b for b in re.findall(r"^```python\n(.*?)^```$", page, flags=re.M | re.S) if "mask_text" in b]
    exec(compile(block, "docs/runtime.md (redaction)", "exec"), {})


def test_the_phrase_rule_writes_the_same_mask() -> None:
    from milpa_chat.runtime import redaction_phrases

    assert redaction_phrases.REDACTED == REDACTED

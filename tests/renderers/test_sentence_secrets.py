"""Secrets written in plain sentences ("my password is …", "the PIN is …", "pwd …") are never shown.

Hypothesis generates 10,000 sentences, each with its own random secret (letters, digits and
punctuation) after one of many lead-ins, in random case, with text around it, as a whole argument
value, inside a longer message, nested in dicts and lists, or inside a JSON document held in a
string. Each batch of sentences goes through a real registry (a mutating tool: its confirm
request, the card of its approval record as the chat composes it, "📄 Show all", the run after the
confirmation and its audit line), the approval card drawn by every renderer of
``RendererRegistry.standard()``, the ``ToolResult`` renderers, a denial's audit line and the
hash-chained trail. No secret may appear in any of them. The count is printed (run with ``-s``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from milpa_chat import ToolContext, ToolRegistry, ToolResult, tool
from milpa_chat.chat.cards import all_arguments, approval_message
from milpa_chat.renderers import ApprovalView, Document, RendererRegistry
from milpa_chat.renderers.base import MessageRenderer
from milpa_chat.runtime.audit import AuditLogger
from milpa_chat.runtime.redaction import REDACTED, mask_text
from milpa_chat.runtime.trail import AuditTrail
from milpa_chat.store import MemoryStore

PER_EXAMPLE = 25
EXAMPLES = 400
CHECKED = {"sentences": 0, "outputs": 0}
STANDARD = RendererRegistry.standard(redact=True)
CHANNELS = ["telegram", "slack", "jupyter", "cli", "web", "json"]
NOW = datetime(2026, 8, 15, 14, 8, tzinfo=UTC)
CLERK = ToolContext.telegram(1, 100, ["notes:write"])

# ------------------------------------------------------------------------------- sentences
_LOWER, _UPPER, _DIGITS = "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789"
_PUNCT = "!#$%&()*+,-./:;<=>?@[]^_{|}~'\"`"


_ALNUM = _LOWER + _UPPER + _DIGITS
_ANY = _ALNUM + _PUNCT


class _Digits:
    """Choices spelled out of one drawn integer: one draw per sentence instead of dozens keeps 10,000
    sentences fast, and Hypothesis still shrinks it (towards short secrets and the first choices)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def pick(self, options: Any) -> Any:
        self.n, i = divmod(self.n, len(options))
        return options[i]

    def text(self, alphabet: str, low: int, high: int) -> str:
        return "".join(self.pick(alphabet) for _ in range(low + self.pick(range(high - low + 1))))


def _secret(d: _Digits) -> tuple[str, str]:
    """``(secret, core)``: punctuation, an alphanumeric core with a digit and both cases, more characters.
    Escaping (HTML, JSON, Slack) never touches the core, so finding it anywhere is a leak."""
    core = list(d.text(_ALNUM, 5, 14))
    for alphabet in (_DIGITS, _UPPER, _LOWER):
        core.insert(d.pick(range(len(core) + 1)), d.pick(alphabet))
    return d.text(_PUNCT, 0, 2) + "".join(core) + d.text(_ANY, 0, 8), "".join(core)


#: "\0" stands for the secret. Introduced values (is/was/:/=...) and values written directly after
#: password-like words and api keys.
_LEAD_INS = [
    "my password is \0", "password: \0", "password=\0", "Password = \0", "the password was \0",
    "the PIN is \0", "pin code: \0", "PIN number is \0", "api key is \0", "API-key: \0", "my API key would be \0",
    "the secret is \0", "our secrets are \0", "the passphrase was \0", "credentials: \0", "my ssn is \0",
    "the password for alice is \0", "the token is now \0", "access token = \0", "db_password: \0",
    "the OTP is \0", "apikey: \0", "your passcode will be \0", "the password has been set to \0",
    'my password is "\0"', "the token was '\0'", "password: `\0`", "the passphrase is “\0”",
    "pwd \0", "token \0", "passphrase \0", "password \0", "api key \0", "credentials \0", "the bot token \0",
]  # fmt: skip
_NUMERIC_LEAD_INS = ["PIN \0", "pin code \0", "SSN \0", "the cvv \0"]
_WORDS = ["the", "deploy", "failed", "for", "ana", "retry", "later", "note", "hi", "please", "log", "in", "ok"]
_AFTER = ["", " thanks", ". Retry later", ", ok?", " and deploy", "!", ") done", "; log in"]
_CASES = [str, str.upper, str.lower, str.title]


def _sentence(n: int) -> tuple[str, str, str, int]:
    """``(sentence, secret, needle, where)``: the needle must never be shown; ``where`` places it."""
    d = _Digits(n)
    if d.pick(range(10)) == 0:  # a number after PIN/SSN/CVV, written directly
        digits = d.text(_DIGITS, 5, 9)
        secret, needle, lead_in = digits, digits, d.pick(_NUMERIC_LEAD_INS)
    else:
        (secret, needle), lead_in = _secret(d), d.pick(_LEAD_INS)
    before = " ".join(d.pick(_WORDS) for _ in range(d.pick(range(5))))
    said = d.pick(_CASES)(lead_in).replace("\0", secret)
    return f"{before} {said}".lstrip() + d.pick(_AFTER), secret, needle, d.pick(range(5))


sentences = st.integers(0, 2**400 - 1).map(_sentence)


def _holders(drawn: list[tuple[str, str, str, int]]) -> dict[str, Any]:
    """The sentences as arguments: whole values, a longer message, nested dicts and lists, JSON in a string."""
    args: dict[str, Any] = {"query": drawn[0][0], "details": {}}
    details: dict[str, Any] = args["details"]
    for i, (text, _, _, where) in enumerate(drawn[1:], 1):
        if where == 0:
            details[f"note{i}"] = text
        elif where == 1:
            details.setdefault("items", []).append({"id": i, "body": {"text": [text]}})
        elif where == 2:
            details.setdefault("log", []).append(f"step {i} ok. {text}. step {i + 1} ok")
        elif where == 3:
            details[f"doc{i}"] = json.dumps({"user": "ana", "says": [text]})
        else:
            details.setdefault("deep", {}).setdefault("er", []).append([{"x": text}])
    return args


# --------------------------------------------------------------------------------- surfaces
class Notes:
    @tool("post_note", "Post a note", scopes=["notes:write"], mutating=True)
    def post_note(self, query: str, details: dict[str, Any]) -> dict[str, Any]:
        return {"posted": {"query": query, "details": details}}


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _world() -> tuple[ToolRegistry, AuditTrail, _Lines]:
    logger = logging.getLogger("milpa_chat.audit.test_sentence_secrets")
    logger.propagate, lines = False, _Lines()
    logger.handlers = [lines]
    logger.setLevel(logging.INFO)
    store = MemoryStore()
    registry = ToolRegistry(store=store, audit=AuditLogger(logger), confirm_ttl=600)
    registry.scan(Notes())
    return registry, AuditTrail(store).attach(registry), lines


_IDS = re.compile(r"[0-9a-f]{16,}")
LOOP = asyncio.new_event_loop()
REGISTRY, TRAIL, LINES = _world()


def _text(payload: Any) -> str:
    """Everything a payload shows, its attached document included."""
    body = payload if isinstance(payload, str) else json.dumps(
        getattr(payload, "messages", None) or getattr(payload, "message", None) or getattr(payload, "html", None)
        or payload, ensure_ascii=False, default=str)  # fmt: skip
    document = getattr(payload, "document", None)
    return body + (document.content.decode("utf-8", "replace") if isinstance(document, Document) else "")


async def _outputs(args: dict[str, Any], notes: list[str]) -> list[str]:
    """Every text a person reads about a confirmed call of ``post_note`` with ``args``."""
    LINES.lines.clear()
    asked = await REGISTRY.call("post_note", args, CLERK)
    approval = await REGISTRY.approvals.get(asked.confirm_token or "")
    assert asked.confirm_token and approval is not None, asked
    card, show_all = approval_message(approval, "requester"), all_arguments(approval)
    done = await REGISTRY.call("post_note", {"confirm_token": asked.confirm_token}, CLERK)
    assert done.success, done
    REGISTRY.audit.denied(CLERK, "post_note", notes[0])
    entry = await TRAIL.append("decided", approval.id, {"note": notes[1], "by": "telegram:100"})
    drawn = ApprovalView(
        id=approval.id, kind="verification", tool="post_note", arguments=args, requester="Ana",
        requester_principal="telegram:100", expires_at=NOW + timedelta(minutes=5), state="rejected",
        reason=notes[2], decision_note=notes[3], outcome=notes[4], decided_by="Bo", decided_at=NOW,
        decided_via="slack",
    )  # fmt: skip
    outputs = [*LINES.lines, json.dumps(entry.fields, ensure_ascii=False)]
    failed = ToolResult.error(notes[5], args, code="INTERNAL_ERROR")
    for channel in CHANNELS:
        renderer = STANDARD.get(channel)
        assert isinstance(renderer, MessageRenderer)
        ctx = ToolContext(channel=channel)
        outputs += [_text(renderer.render_message(card)), _text(renderer.render_message(show_all)),
                    _text(STANDARD.render_approval(drawn, channel)), _text(STANDARD.render(asked, ctx)),
                    _text(STANDARD.render(done, ctx)), _text(STANDARD.render(failed, ctx))]  # fmt: skip
    return outputs


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_no_generated_sentence_secret_is_shown_anywhere(data: st.DataObject) -> None:
    drawn = data.draw(st.lists(sentences, min_size=PER_EXAMPLE, max_size=PER_EXAMPLE))
    texts = [s for s, _, _, _ in drawn]
    for sentence, secret, _, _ in drawn:  # the words stay, the secret goes
        masked = mask_text(sentence)
        assert secret not in masked and REDACTED in masked, (sentence, masked)
    args = _holders(drawn)
    outputs = LOOP.run_until_complete(_outputs(args, texts[-6:]))
    everything = _IDS.sub("<id>", "\n".join(outputs))  # (ids are hex: they may hold any run of digits)
    for sentence, secret, needle, _ in drawn:
        assert needle not in everything and secret not in everything, (sentence, secret)
    assert REDACTED in everything
    CHECKED["sentences"] += len(drawn)
    CHECKED["outputs"] += len(outputs)


def test_zz_print_the_count() -> None:
    n = CHECKED["sentences"]
    print(f"\n{n:,} generated sentence secrets → 0 shown ({CHECKED['outputs']:,} outputs checked: audit lines, "
          "trail entries, confirm requests, chat cards, Show all, approval cards and results on "
          f"{', '.join(CHANNELS)})")  # fmt: skip
    assert n >= 10_000 or n == 0  # 0: the property test was deselected

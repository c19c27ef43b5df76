"""Redaction everywhere a person reads: >= 10,000 generated payloads, 0 secret values shown.

Each payload hides one generated secret in one of the ways the rule promises to catch (under a
secret key in any spelling, at any depth, in lists and header dicts; inside free text as a known
token format, ``Bearer``, a DSN password, a URL query parameter, ``key=value``/``key: value``,
``export X_API_KEY=``, a JSON document in a string) and the test looks for the secret in

* audit lines (``AuditLogger``: call, denied, validation failed),
* every renderer of ``RendererRegistry.standard(redact=True)``: results of every shape and
  approval cards, on every channel, attached documents included,
* validation messages (results, cards and audit lines of calls whose arguments break a rule).

The number of payloads checked is printed at the end (run with ``-s``).
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal
from uuid import UUID

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import AfterValidator, BaseModel, Field

from milpa_chat import ToolContext, ToolRegistry, ToolResult, tool
from milpa_chat.renderers import ApprovalView, Document, RendererRegistry
from milpa_chat.renderers.compose import result_document
from milpa_chat.runtime.audit import AuditLogger
from milpa_chat.runtime.redaction import REDACTED, is_secret_key, mask_text, redact

CHECKED = {"audit": 0, "renderers": 0, "validation": 0}
_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]


def _examples(n: int) -> settings:
    return settings(max_examples=n, deadline=None, suppress_health_check=_HEALTH)


# ------------------------------------------------------------------------------- secrets
ISSUE_KEYS = [
    "secret_key", "aws_secret_access_key", "access_key", "Proxy-Authorization", "bearer", "jwt", "credential",
    "api_keys", "passwords", "tokens", "master_key", "encryption_key", "client_key", "auth_header", "pass",
    "secrets", "password", "token", "secret", "api_key", "apiKey", "Authorization", "client_secret",
    "access_token", "private_key", "passwd", "refresh_token", "session_id", "Set-Cookie", "pin", "x-api-key",
    "signing_secret", "bot_token", "db_password", "OPENAI_API_KEY", "credentials", "cookie",
]  # fmt: skip
HARMLESS_KEYS = ["passenger", "compass", "bypass", "max_tokens", "token_count", "tokens_used", "prompt_tokens",
                 "token_type", "key", "public_key", "author", "secretary", "sort_key", "note", "title"]  # fmt: skip
_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"


def _secret(n: int) -> str:
    digits = []
    for _ in range(28):  # one integer draw, spelled in the alphabet (cheaper than 28 character draws)
        n, d = divmod(n, len(_ALPHABET))
        digits.append(_ALPHABET[d])
    return "S3CR" + "".join(digits)


secrets = st.integers(0, len(_ALPHABET) ** 28 - 1).map(_secret)
_PROSE = ["the", "deploy", "failed", "for", "ana", "retry", "later", "log", "line", "ok", "on", "db"]
prose = st.lists(st.sampled_from(_PROSE), max_size=4).map(" ".join)


@st.composite
def secret_keys(draw: st.DrawFn) -> str:
    """A key the issue names, as written or respelled (separator and case per word)."""
    key = draw(st.sampled_from(ISSUE_KEYS))
    if draw(st.booleans()):
        return key
    parts = [p for p in key.replace("-", "_").split("_") if p]
    sep = draw(st.sampled_from(["_", "-", "", ".", " "]))
    style = draw(st.sampled_from(["lower", "upper", "title", "camel"]))
    if style == "camel":
        return parts[0].lower() + "".join(p.title() for p in parts[1:])
    return sep.join(getattr(p, style)() for p in parts)


_FORMS = [
    lambda s: f"Authorization: Bearer {s}",
    lambda s: f"curl -H 'Proxy-Authorization: Basic {s}' https://x.example",
    lambda s: f"Bearer {s}",
    lambda s: f"sk-proj-{s}",
    lambda s: f"sk-ant-api03-{s}",
    lambda s: f"ghp_{s}",
    lambda s: f"github_pat_{s}",
    lambda s: f"xoxb-1234567890-{s}",
    lambda s: f"xoxp-1234-{s}",
    lambda s: f"AKIA{s[4:20].upper()}",
    lambda s: f"eyJhbGciOiJIUzI1NiJ9.eyJ{s}.{s[::-1]}",
    lambda s: f"postgresql://app:{s}@db.internal:5432/app",
    lambda s: f"https://api.example.com/v1/items?page=2&token={s}&q=milk",
    lambda s: f"https://api.example.com/v1?api_key={s}",
    lambda s: f"password={s}",
    lambda s: f"db_password = {s}",
    lambda s: f"export OPENAI_API_KEY={s}",
    lambda s: f"api_key: {s}",
    lambda s: json.dumps({"user": "ana", "password": s}),
    lambda s: json.dumps({"config": {"headers": {"Authorization": f"Bearer {s}"}}}, indent=2),
    lambda s: "body was " + json.dumps({"client_secret": s}) + " (truncated)",
    lambda s: json.dumps(json.dumps({"token": s})),  # escaped JSON inside JSON text
    lambda s: f"-----BEGIN RSA PRIVATE KEY-----\n{s}\n{s}\n-----END RSA PRIVATE KEY-----",
]


def _needles(secret: str) -> tuple[str, ...]:
    body = secret[4:]
    return (body[:12], body[-12:], body[4:20].upper()) if len(body) >= 20 else (body,)


def _leaks(secret: str, text: str) -> bool:
    return any(n in text for n in _needles(secret))


# Strategies draw *recipes* (functions of the secret), built once: cheaper than new strategies per draw.
Recipe = Any
free_texts = st.tuples(prose, st.sampled_from(_FORMS), prose).map(
    lambda t: lambda s: f"{t[0]} {t[1](s)} {t[2]}".strip()
)
_HOLDERS = [lambda s: s, lambda s: [s], lambda s: {"value": s}]
_HEADERS = ["Authorization", "Proxy-Authorization", "X-Api-Key", "Cookie"]
_inner = st.one_of(
    st.tuples(secret_keys(), st.sampled_from(_HOLDERS)).map(lambda t: lambda s: {t[0]: t[1](s)}),
    st.tuples(st.sampled_from(_HEADERS), st.booleans()).map(
        lambda t: lambda s: {"headers": {t[0]: f"Bearer {s}" if t[1] else s}}
    ),
    secret_keys().map(lambda k: lambda s: [{"name": "ana"}, {k: s}]),
    st.tuples(st.sampled_from(["note", "message", "log", "body", "error"]), free_texts).map(
        lambda t: lambda s: {t[0]: t[1](s)}
    ),
)
_WRAPS = [lambda v: {"data": v}, lambda v: [v], lambda v: {"items": [1, v]}]
_extra = st.dictionaries(st.sampled_from(HARMLESS_KEYS), st.sampled_from(["x", 1, None, "line two"]), max_size=3)


def _payload(inner: Recipe, wraps: list[Any], extra: dict[str, Any]) -> Recipe:
    def build(secret: str) -> Any:
        value = inner(secret)
        for wrap in wraps:  # bury it
            value = wrap(value)
        return {**extra, "payload": value}

    return build


#: A dict with the secret somewhere inside: under a secret key, in text, in a header dict, in a list.
payloads = st.tuples(_inner, st.lists(st.sampled_from(_WRAPS), max_size=4), _extra).map(lambda t: _payload(*t))


# ------------------------------------------------------------------------------- audit
class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _audit() -> tuple[AuditLogger, _Lines]:
    logger = logging.getLogger("milpa_chat.audit.test_everywhere")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    lines = _Lines()
    logger.handlers = [lines]
    return AuditLogger(logger), lines


@_examples(4500)
@given(st.data())
def test_audit_lines_never_show_a_secret(data: st.DataObject) -> None:
    secret = data.draw(secrets)
    args = data.draw(payloads)(secret)
    audit, lines = _audit()
    ctx = ToolContext.cli()
    audit.call(ctx, "deploy", args, data.draw(st.booleans()), "INTERNAL_ERROR", 1.5)
    audit.denied(ctx, "deploy", data.draw(free_texts)(secret))
    audit.validation_failed(ctx, "deploy", "config: " + data.draw(free_texts)(secret))
    text = "\n".join(lines.lines)
    assert len(lines.lines) == 3 and not _leaks(secret, text), text
    CHECKED["audit"] += 1


# ---------------------------------------------------------------------------- renderers
STANDARD = RendererRegistry.standard(redact=True)
#: One channel per renderer of standard(): telegram, slack, jupyter, cli (also tui and the default), web,
#: json (also mcp and api).
CHANNELS = ["telegram", "slack", "jupyter", "cli", "web", "json"]
NOW = datetime(2026, 8, 15, 14, 8, tzinfo=UTC)


def _everything(payload: Any) -> str:
    documents = [getattr(payload, "document", None)]
    body = payload if isinstance(payload, str) else json.dumps(
        getattr(payload, "messages", None) or getattr(payload, "message", None) or getattr(payload, "html", None)
        or payload, ensure_ascii=False, default=str)  # fmt: skip
    return body + "".join(d.content.decode("utf-8", "replace") for d in documents if isinstance(d, Document))


@st.composite
def results(draw: st.DrawFn, secret: str) -> ToolResult:
    data = draw(payloads)(secret)
    text = draw(free_texts)(secret)
    shape = draw(st.sampled_from(["success", "error", "list", "detail", "confirmation", "text", "message"]))
    if shape == "error":
        code = draw(st.sampled_from(["INTERNAL_ERROR", "VALIDATION_ERROR", "FORBIDDEN", "NOT_FOUND", "TIMEOUT"]))
        return ToolResult.error(text, data, code=code)
    if shape == "list":
        return ToolResult.paginated([data, {"id": 2, "title": text}] * draw(st.integers(1, 3)), 1, 60, 20, text)
    if shape == "detail":
        return ToolResult.detail(data, "Server", text, [{"label": "Restart", "action": "restart"}])
    if shape == "confirmation":
        return ToolResult.confirmation(text, data, "rotate", "key", 7)
    if shape == "text":
        return ToolResult.success("\n".join([text] * draw(st.sampled_from([1, 400]))))  # long: with a document
    if shape == "message":
        return ToolResult.success({"ok": True}, text)
    return ToolResult.success(data, draw(st.sampled_from([None, "Done"])))


@_examples(2000)
@given(st.data())
def test_every_renderer_of_the_standard_registry_hides_every_secret(data: st.DataObject) -> None:
    secret = data.draw(secrets)
    result = data.draw(results(secret))
    for channel in CHANNELS:
        out = _everything(STANDARD.render(result, ToolContext(channel=channel)))
        assert not _leaks(secret, out), (channel, out[:2000])
    document = result_document(result, redact=True)
    assert not _leaks(secret, document.content.decode()), document.content[:2000]
    view = ApprovalView(
        id="ap_1", kind=data.draw(st.sampled_from(["confirm", "verification"])), tool="deploy",
        arguments=data.draw(payloads)(secret), requester="Ana", requester_principal="telegram:1",
        expires_at=NOW + timedelta(minutes=5), state=data.draw(st.sampled_from(["pending", "failed", "rejected"])),
        reason=data.draw(free_texts)(secret), decision_note=data.draw(free_texts)(secret),
        outcome=data.draw(free_texts)(secret), decided_by="Bo", decided_at=NOW, decided_via="slack",
    )  # fmt: skip
    for channel in CHANNELS:
        card = STANDARD.render_approval(view, channel)
        out = _everything(card) + _everything(getattr(card, "document", None) or "")
        assert not _leaks(secret, out), (channel, out[:2000])
    CHECKED["renderers"] += 1


# --------------------------------------------------------------------------- validation
SIGNUP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "password": {"type": "string", "minLength": 80},
        "pin": {"type": "string", "pattern": "^[0-9]{4}$"},
        "code": {"type": "string", "maxLength": 3},
        "color": {"enum": ["red", "blue"]},
        "mode": {"const": "strict"},
        "count": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 2}, "maxItems": 1},
        "choice": {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 2}]},
        "nested": {"type": "object", "properties": {"token": {"type": "string", "minLength": 80}}},
        "unique": {"type": "array", "uniqueItems": True},
        "forbidden": False,
        "not_text": {"not": {"type": "string"}},
    },
    "additionalProperties": False,
}


class Inner(BaseModel):
    token: Annotated[str, Field(max_length=3)]


def _no_s3cr(value: str) -> str:
    if value.startswith("S3CR"):
        raise ValueError(f"{value} looks like a secret")  # a custom validator that echoes its input
    return value


class Signup:
    @tool("signup_typed", "Sign up (typed)", mutating=False)
    def signup_typed(
        self,
        password: Annotated[str, Field(min_length=80)] = "x" * 80,
        pin: Annotated[str, Field(pattern=r"^[0-9]{4}$")] = "1234",
        code: Annotated[str, Field(max_length=3)] = "abc",
        color: Literal["red", "blue"] = "red",
        count: int = 0,
        ident: UUID | None = None,
        tags: Annotated[list[Annotated[str, Field(max_length=2)]], Field(max_length=1)] = [],  # noqa: B006
        inner: Inner | None = None,
        checked: Annotated[str, AfterValidator(_no_s3cr)] = "fine",
    ) -> dict[str, Any]:
        return {}


def _registry() -> tuple[ToolRegistry, _Lines]:
    audit, lines = _audit()
    registry = ToolRegistry(audit=audit)
    registry.register("signup", "Sign up", SIGNUP_SCHEMA, lambda args, ctx: {}, mutating=False)
    registry.scan(Signup())
    return registry, lines


REGISTRY, REGISTRY_LINES = _registry()


_BAD = {
    "password": lambda s: s, "pin": lambda s: s, "code": lambda s: s, "color": lambda s: s, "mode": lambda s: s,
    "count": lambda s: s, "tags": lambda s: [s], "choice": lambda s: s, "nested": lambda s: {"token": s},
    "unique": lambda s: [s, s], "forbidden": lambda s: s, "not_text": lambda s: s,
    "ident": lambda s: s, "inner": lambda s: {"token": s}, "checked": lambda s: s,
}  # fmt: skip
_TYPED = {"password", "pin", "code", "color", "count", "ident", "tags", "inner", "checked"}


@_examples(3500)
@given(st.data())
def test_validation_messages_never_repeat_the_rejected_value(data: st.DataObject) -> None:
    secret = data.draw(secrets)
    typed = data.draw(st.booleans())
    names = sorted(_TYPED if typed else set(SIGNUP_SCHEMA["properties"]))
    chosen = data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=4, unique=True))
    args = {name: _BAD[name](secret) for name in chosen}
    REGISTRY_LINES.lines.clear()
    result = REGISTRY.call_sync("signup_typed" if typed else "signup", args)
    assert result.code == "VALIDATION_ERROR", result
    card = STANDARD.render(result, ToolContext(channel="telegram"))
    shown = [result.to_json(), *REGISTRY_LINES.lines, _everything(card)]
    text = "\n".join(shown)
    assert not _leaks(secret, text), text
    for error in result.data["errors"]:  # each names its path and its rule
        assert error["path"] in _BAD or error["path"].split(".")[0] in _BAD, error
        assert any(w in error["message"] for w in ("should", "allowed", "Value error", "matches")), error
    CHECKED["validation"] += 1


# -------------------------------------------------------------------------- both directions
@pytest.mark.parametrize("key", ISSUE_KEYS)
def test_every_key_the_issue_names_is_secret(key: str) -> None:
    assert is_secret_key(key) and is_secret_key(key.upper()) and is_secret_key(key.replace("_", "-"))


@pytest.mark.parametrize("key", HARMLESS_KEYS)
def test_harmless_words_are_shown(key: str) -> None:
    assert not is_secret_key(key)
    assert redact({key: "visible"}) == {key: "visible"}


@pytest.mark.parametrize(
    "text",
    ["password: must be at least 8 characters", "token: Missing required field", "max_tokens=100",
     "the compass points north", "passenger=12", "see https://example.com/a?page=2", "14:08:11 done"],
)  # fmt: skip
def test_ordinary_text_is_kept(text: str) -> None:
    assert mask_text(text) == text


def test_zz_print_the_count() -> None:
    total = sum(CHECKED.values())
    print(f"\nredaction: {total:,} payloads checked ({CHECKED}), 0 secret values shown")
    assert REDACTED == "***REDACTED***"

"""Redaction: the one rule for everything a person reads (audit lines, cards, renderers, error texts).

Two parts, both applied at any depth, in mappings, lists and tuples:

**Secret keys.** A key is split into words (``aws_secret_access_key``, ``apiKey``, ``API-KEY``,
``Proxy-Authorization``, ``x.auth.token`` all split the same way; plurals count: ``api_keys``,
``passwords``, ``tokens``). It is secret when

* a word is a secret word: ``password``, ``passwd``, ``pwd``, ``pass``, ``passphrase``, ``passcode``,
  ``secret``, ``token``, ``authorization``, ``auth``, ``oauth``, ``bearer``, ``jwt``, ``credential``,
  ``cookie``, ``pin``, ``otp``, ``totp``, ``cvv``, ``cvc``, ``ssn``, or a glued form of one
  (``apikey``, ``accesstoken``, ``dbpassword``, ``clientsecret``, ``sessionid``...);
* or the word ``key`` follows a qualifier (``api``, ``access``, ``secret``, ``private``, ``master``,
  ``encryption``, ``client``, ``signing``, ``session``, ``account``, ``ssh``, ...): ``master_key``,
  ``client_key``, ``aws_secret_access_key`` (``key`` alone, ``public_key``, ``sort_key`` are data);
* or ``session`` is followed by ``id``.

Words are whole words: ``passenger``, ``compass``, ``bypass``, ``secretary``, ``author``,
``tokenizer`` and ``pinned`` are data. A key that also says what it describes rather than holding
it is data: ``token_type``, ``auth_url``, ``password_policy``, ``secret_name``, ``password_length``,
``token_expires_at`` (a descriptor word: type, kind, method, mode, scheme, url, uri, endpoint,
provider, enabled, required, status, length, size, ttl, expiry, expires, policy, strength, format,
field, name, label, description, count, file, path, created, updated, changed...).

*Token counters are data* (a judgment call): LLM usage figures such as ``max_tokens``,
``prompt_tokens``, ``completion_tokens``, ``total_tokens``, ``token_count``, ``tokens_used``,
``tokens_per_minute`` and ``remaining_tokens`` are shown, because a key that counts tokens never
holds one and hiding usage figures would make every agent card useless. ``tokens`` alone, and
``refresh_token``, ``bot_token``, ``csrf_token``, ``next_page_token`` are hidden.

The value of a secret key is replaced by ``***REDACTED***`` whatever its type (a dict under
``auth`` is hidden whole); ``_ctx`` keys are dropped. Headers written as pairs count as keys too: in a
``[name, value]`` pair (a list of headers as ``requests`` and ``httpx`` take them) and in a
``{"name": …, "value": …}`` object (HAR, form fields; also ``key``/``header`` for ``name``), a secret
name hides its value: ``["Authorization", "Bearer …"]``, ``{"name": "X-Api-Key", "value": …}``.

**Secrets inside text.** Every string is masked (:func:`mask_text`) — values under ordinary keys,
messages, errors, notes:

* known token formats: OpenAI/Anthropic ``sk-…``, Stripe ``sk_live_…``/``rk_…``, GitHub ``ghp_…``
  ``gho_…`` ``ghs_…`` ``github_pat_…``, GitLab ``glpat-…``, Slack ``xoxb-…`` ``xoxp-…`` ``xapp-…``,
  AWS ``AKIA…``, Google ``AIza…``, Hugging Face ``hf_…``, npm ``npm_…``, Telegram bot tokens, JWTs
  and PEM private key blocks;
* ``Bearer <credential>`` anywhere, and whole ``Authorization:``/``Proxy-Authorization:``/
  ``Cookie:``/``Set-Cookie:``/``X-Api-Key:`` header values;
* the password of URL userinfo (``postgresql://user:***REDACTED***@host/db``);
* ``key=value``, ``key: value`` and ``"key": "value"`` whose key is secret by the rule above:
  ``password=…``, ``?token=…&api_key=…``, ``export OPENAI_API_KEY=…``, YAML, JSON (also escaped
  JSON inside JSON). ``key: value`` leaves prose alone (``password: must be at least 8 characters``
  keeps its text: a colon followed by a sentence is not a credential);
* a string that is a whole JSON document is parsed, redacted by both rules, and written back;
* a value introduced by a secret word in a sentence: ``my password is …``, ``the PIN is …``,
  ``api key: …``, ``pwd …`` (the words stay; the rule, and what is kept as prose, is in
  :mod:`milpa_chat.runtime.redaction_phrases`).

The limits of the rule: a secret under a harmless key, in no known format and not written as
``key=value`` (``"note": "hunter2"``) cannot be recognised. Keys themselves are never masked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, Final

from milpa_chat.runtime import redaction_phrases as phrases

__all__ = ["REDACTED", "Redaction", "is_secret_key", "mask_text", "redact"]

REDACTED: Final = "***REDACTED***"
#: The fields that name a pair's key in ``{"name": ..., "value": ...}`` objects (headers, form fields).
_NAMES: Final = ("name", "key", "header")

_SECRET_WORDS: Final = frozenset({
    "password", "passwd", "pwd", "pass", "passphrase", "passcode", "secret", "token", "authorization",
    "auth", "oauth", "bearer", "jwt", "credential", "cookie", "pin", "otp", "totp", "cvv", "cvc", "ssn",
})  # fmt: skip
#: Glued endings: a single word ending so is secret (``dbpassword``, ``accesstoken``, ``xapikey``).
_GLUED: Final = (
    "password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey", "secretkey", "privatekey",
    "masterkey", "encryptionkey", "clientkey", "signingkey", "sessionkey", "sessionid", "credential",
    "authorization", "cookie",
)  # fmt: skip
_GLUED_SET: Final = frozenset(_GLUED)
#: Glued beginnings, secret when a known tail follows (``authheader``; not ``author``, ``secretary``).
_GLUED_HEADS: Final = ("password", "passwd", "pass", "pwd", "secret", "token", "auth", "bearer", "credential",
                       "cookie", "apikey", "jwt", "session")  # fmt: skip
_GLUED_TAILS: Final = frozenset({
    "header", "value", "hash", "string", "str", "data", "info", "code", "id", "key", "token", "secret", "text",
    "raw", "b64", "base64", "hex", "bytes", "plain", "cleartext", "word", "phrase", "pin", "cookie", "blob",
})  # fmt: skip
_KEY_QUALIFIERS: Final = frozenset({
    "api", "access", "secret", "private", "master", "encryption", "decryption", "client", "signing", "sign",
    "session", "auth", "ssh", "gpg", "pgp", "hmac", "aes", "rsa", "license", "licence", "account", "service",
    "app", "webhook", "bot", "admin", "root", "shared", "crypto", "storage", "subscription", "consumer", "jwt",
    "deploy", "recovery", "wallet", "seed",
})  # fmt: skip
_DESCRIPTORS: Final = frozenset({
    "type", "kind", "method", "mode", "scheme", "url", "uri", "endpoint", "provider", "enabled", "required",
    "status", "length", "len", "size", "ttl", "expiry", "expires", "expiration", "policy", "policies",
    "rotation", "strength", "format", "field", "name", "label", "description", "count", "file", "path",
    "created", "updated", "changed", "lifetime", "timeout", "duration", "location", "algorithm", "version",
})  # fmt: skip
#: Words that make a ``token`` key a counter (see the module docstring).
_TOKEN_COUNTERS: Final = frozenset({
    "count", "counts", "used", "usage", "limit", "limits", "max", "min", "maximum", "minimum", "total",
    "budget", "num", "number", "n", "remaining", "estimate", "estimated", "per", "prompt", "completion",
    "input", "output", "cached", "reasoning", "left", "rate", "window", "spent",
})  # fmt: skip
_WORD: Final = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def _words(key: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(key)]


def _secret_word(word: str) -> str | None:
    """The secret stem ``word`` is (or is glued onto), else ``None``."""
    for w in (word, word[:-1]) if word.endswith("s") and len(word) > 3 else (word,):
        if w in _SECRET_WORDS or w in _GLUED_SET:
            return w
        for head in _GLUED_HEADS:  # "authheader", "passwordhash", "tokenvalue"
            if w.startswith(head) and w[len(head) :] in _GLUED_TAILS:
                return head
        for glued in _GLUED:
            if w.endswith(glued) and len(w) > len(glued):
                prefix = w[: -len(glued)]
                if glued == "token" and prefix in _TOKEN_COUNTERS:
                    return None
                return glued
    return None


@lru_cache(maxsize=16384)
def _is_secret(key: str) -> bool:
    words = _words(key)
    if not words or any(w in _DESCRIPTORS for w in words):
        return False
    stems = [_secret_word(w) for w in words]
    if any(s == "token" for s in stems) and any(w in _TOKEN_COUNTERS for w in words):
        return False
    if any(s is not None for s in stems):
        return True
    for i in range(1, len(words)):
        if words[i] in ("key", "keys") and words[i - 1] in _KEY_QUALIFIERS:
            return True
        if words[i] in ("id", "ids") and words[i - 1] == "session":
            return True
    # a run of capitals can split wrongly ("APIkey" -> "AP", "Ikey"): the glued form decides then
    return len(words) > 1 and _secret_word("".join(words)) is not None


def _normal(name: str) -> str:
    return "".join(_words(name))


def is_secret_key(key: object, extra: Iterable[str] = ()) -> bool:
    """True when a mapping key names a secret (see the module docstring); ``extra`` adds names."""
    if not isinstance(key, str):
        return False
    if _is_secret(key):
        return True
    if extra:
        words, norm = _words(key), _normal(key)
        for name in extra:
            e = _normal(name)
            if e and (norm == e or e in words or (e + "s") in words):
                return True
    return False


# ------------------------------------------------------------------------------- free text
# Every detector is found through a literal anchor (a C-speed ``str.find`` on the lower-cased text)
# and then matched *at* that position: a megabyte of log text costs a few milliseconds, not a regex
# alternation tried at every character.
_TRIGGER: Final = re.compile(
    r"[:=@]|-----BEGIN|sk-|[sr]k_|gh[pousr]_|github_pat_|glpat-|xox|xapp-|A[KS]IA|AIza|eyJ|hf_|npm_|(?i:bearer)"
)
_TOKEN_BODY: Final = r"(?![A-Za-z0-9_\-])"
#: (anchors in lower case, pattern matched at an anchor, needs a word boundary before it); group ``s``
#: (if any) is what is masked. Only ``sk-``/``sk_`` want a boundary (``task-…``, ``disk_live_…``).
# fmt: off
_DETECTORS: Final[tuple[tuple[tuple[str, ...], re.Pattern[str], bool], ...]] = (
    (("-----begin",), re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY"
        r"(?: BLOCK)?-----|\Z)"), False),
    (("proxy-authorization", "authorization", "set-cookie", "cookie", "x-api-key", "x-auth-token"), re.compile(
        r"(?i:proxy-authorization|authorization|set-cookie|cookie|x-api-key|x-auth-token)[ \t]*:[ \t]*"
        r"(?P<s>[^\r\n\"']+)"), True),
    (("://",), re.compile(r"://[^\s:/?#@]*:(?P<s>[^\s/?#]+)@"), False),
    (("bearer",), re.compile(
        r"(?i:bearer)[ \t]+(?P<s>(?=[A-Za-z0-9\-._~+/]*[0-9\-._~+/])[A-Za-z0-9\-._~+/]{8,}=*)"), False),
    (("sk-",), re.compile(r"sk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_\-]{16,}"), True),
    (("sk_live_", "sk_test_", "rk_live_", "rk_test_"), re.compile(r"[sr]k_(?:live|test)_[A-Za-z0-9]{10,}"), True),
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), re.compile(r"gh[pousr]_[A-Za-z0-9]{20,}"), False),
    (("github_pat_",), re.compile(r"github_pat_[A-Za-z0-9_]{20,}"), False),
    (("glpat-",), re.compile(r"glpat-[A-Za-z0-9_\-]{20,}"), False),
    (("xox",), re.compile(r"xox[abposre]-[A-Za-z0-9\-]{10,}"), False),
    (("xapp-",), re.compile(r"xapp-[A-Za-z0-9\-]{10,}"), False),
    (("akia", "asia", "agpa", "aida", "aroa"),
     re.compile(r"(?:AKIA|ASIA|AGPA|AIDA|AROA)[A-Z0-9]{16}(?![A-Za-z0-9])"), False),
    (("aiza",), re.compile(r"AIza[0-9A-Za-z_\-]{35}"), False),
    (("eyj",), re.compile(r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), False),
    (("hf_",), re.compile(r"hf_[A-Za-z0-9]{30,}"), False),
    (("npm_",), re.compile(r"npm_[A-Za-z0-9]{36}"), False),
)
# fmt: on
_TELEGRAM: Final = re.compile(r"(?<![0-9A-Za-z])[0-9]{6,12}:AA[A-Za-z0-9_\-]{30,}")
_STEMS: Final = ("pass", "pwd", "secret", "token", "key", "auth", "bearer", "jwt", "cred", "cookie", "session",
                 "pin", "otp", "cvv", "cvc", "ssn")  # fmt: skip
_KEY_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")
_AFTER_KEY: Final = re.compile(
    r"(?P<kq>\\?[\"'])?[ \t]*(?P<sep>[:=])[ \t]*"
    r"(?:\"(?P<dq>(?:\\.|[^\"\\\n])*)\"|'(?P<sq>(?:\\.|[^'\\\n])*)'|\\\"(?P<eq>.*?)\\\""
    r"|(?P<scheme>(?i:bearer|basic|digest|negotiate|token)[ \t]+[^\s\"'&,;<>]+)"
    r"|(?P<v>[^\s\"'&,;<>]+))"
)
_ANY_ANCHOR: Final = re.compile("|".join(re.escape(a) for d in _DETECTORS for a in d[0]) + "|:aa|" + "|".join(_STEMS))
_SENTENCE: Final = re.compile(r"[A-Za-z]+")
_WORDISH: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
Span = tuple[int, int]


def _lower(text: str) -> str:
    """``text`` lower-cased, position for position (a few letters lower to two characters: kept)."""
    low = text.lower()
    return low if len(low) == len(text) else "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


def _replace(text: str, spans: list[Span]) -> str:
    if not spans:
        return text
    spans.sort()
    merged: list[list[int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:  # overlapping finds: one mask covers both
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out: list[str] = []
    last = 0
    for start, end in merged:
        out += (text[last:start], REDACTED)
        last = end
    out.append(text[last:])
    return "".join(out)


def _finds(low: str, anchor: str) -> list[int]:
    found, at = [], low.find(anchor)
    while at != -1:
        found.append(at)
        at = low.find(anchor, at + 1)
    return found


def _known_formats(text: str, low: str) -> list[Span]:
    spans: list[Span] = []
    for anchors, pattern, boundary in _DETECTORS:
        for anchor in anchors:
            for at in _finds(low, anchor):
                m = pattern.match(text, at)
                if m is not None and boundary and at and low[at - 1] in _WORDISH and m.end() - at < 36:
                    continue  # "task-1234…": a word ending in "sk"; a real key (36+ characters) is masked anyway
                if m is not None:
                    spans.append(m.span("s") if "s" in pattern.groupindex else m.span())
    if ":aa" in low:
        spans += [m.span() for m in _TELEGRAM.finditer(text)]
    return spans


def _key_values(text: str, low: str) -> list[Span]:
    """Spans of values written after a secret key: ``password=…``, ``"token": "…"``, ``api_key: …``."""
    spans: list[Span] = []
    seen: set[int] = set()
    n = len(text)
    for stem in _STEMS:
        for at in _finds(low, stem):
            start = at
            while start > 0 and low[start - 1] in _KEY_CHARS and at - start < 80:
                start -= 1
            if start > 0 and low[start - 1] in _KEY_CHARS:
                continue  # longer than a key
            while start < at and not (low[start].isalpha() or low[start] == "_"):
                start += 1
            end = at + len(stem)
            while end < n and low[end] in _KEY_CHARS and end - start < 81:
                end += 1
            if start in seen:
                continue
            seen.add(start)
            m = _AFTER_KEY.match(text, end)
            if m is not None and is_secret_key(text[start:end]):
                span = _value_span(m)
                if span is not None:
                    spans.append(span)
    return spans


def _value_span(m: re.Match[str]) -> Span | None:
    value = m.group("v")
    if value is not None:
        if value.startswith(REDACTED):
            return None
        if m.group("sep") == ":" and m.group("kq") is None and _prose(m, value):
            return None
    for name in ("dq", "sq", "eq", "scheme", "v"):
        if m.group(name) is not None:
            return None if m.group(name) in (REDACTED, "") else m.span(name)
    return None  # pragma: no cover - one alternative always matched


def _prose(m: re.Match[str], value: str) -> bool:
    """``password: must be at least 8 characters``: a word followed by more words is not a credential."""
    if not _SENTENCE.fullmatch(value):
        return False
    rest = m.string[m.end() : m.end() + 2]
    return len(rest) == 2 and rest[0] == " " and rest[1].isalpha()


def mask_text(text: str) -> str:
    """``text`` with every recognisable secret replaced by ``***REDACTED***`` (see the module docstring)."""
    if len(text) < 5:
        return text
    if _TRIGGER.search(text) is None:  # no known format, no key=value: only a sentence may hold a secret
        low = text.lower()
        if len(low) != len(text):
            low = _lower(text)
        return text if phrases.LEAD.search(low) is None else _replace(text, phrases.spans(text, low))
    head = text.lstrip()[:1]
    if head in ("{", "[") and len(text) <= 1_000_000:
        document = _json_document(text)
        if document is not None:
            return document
    low = _lower(text)
    if len(text) < 2048 and _ANY_ANCHOR.search(low) is None:  # one scan beats 50 finds on short text
        return text
    masked = _replace(text, _known_formats(text, low))
    if masked is not text:
        low = _lower(masked)
    return _replace(masked, _key_values(masked, low) + phrases.spans(masked, low))


def _json_document(text: str) -> str | None:
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(parsed, dict | list):
        return None
    cleaned = redact(parsed)
    if cleaned == parsed:
        return text
    indent = 2 if "\n" in text.strip() else None
    return json.dumps(cleaned, ensure_ascii=False, indent=indent)


# ----------------------------------------------------------------------------- structures
def redact(value: Any, extra: Iterable[str] = (), *, _depth: int = 0) -> Any:
    """A copy of ``value`` with secret-keyed values replaced, ``_ctx`` keys dropped and every string
    masked. Mappings become dicts and tuples lists; other objects are kept as they are; anything
    nested deeper than 64 levels becomes ``"<too deep>"``."""
    kind = type(value)
    if kind is str:
        return mask_text(value)
    if kind is int or kind is float or kind is bool or value is None:
        return value
    if _depth >= 64:
        return "<too deep>"
    extra = extra if isinstance(extra, tuple) else tuple(extra)
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            if k == "_ctx":
                continue
            out[k] = REDACTED if is_secret_key(k, extra) else redact(v, extra, _depth=_depth + 1)
        if "value" in out and any(_secret_name(value.get(n), extra) for n in _NAMES):
            out["value"] = REDACTED  # {"name": "Authorization", "value": ...}
        return out
    if isinstance(value, list | tuple):
        if len(value) == 2 and _secret_name(value[0], extra):
            return [mask_text(value[0]), REDACTED]  # ["Authorization", "Bearer ..."]
        return [redact(v, extra, _depth=_depth + 1) for v in value]
    if isinstance(value, str):
        return mask_text(value)
    return value


def _secret_name(name: object, extra: tuple[str, ...]) -> bool:
    """Whether ``name`` names a secret as a header or a field does: one word-like token (no spaces, at most 64
    characters; a sentence that mentions a PIN is text, masked as text) that is a secret key."""
    return (
        type(name) is str and 0 < len(name) <= 64 and not any(c.isspace() for c in name) and is_secret_key(name, extra)
    )


#: Texts :meth:`Redaction.mask` remembers (masking is a pure function of the text), and the longest it keeps.
_MASKED: dict[str, str] = {}
_MASKED_KEPT: Final = 1024
_MASKED_LONGEST: Final = 1000


class Redaction:
    """The rule as an object: call it with a key (``True`` when secret); :meth:`mask` masks text.

    Renderers hand one to their converter (``hide=``) so that keys and strings are redacted in the
    same walk that converts the data. ``extra`` names more secret keys (``AuditLogger(sensitive_fields=...)``).
    """

    __slots__ = ("extra",)

    def __init__(self, extra: Iterable[str] = ()) -> None:
        self.extra: tuple[str, ...] = tuple(extra)

    def __call__(self, key: str) -> bool:
        return is_secret_key(key, self.extra)

    @staticmethod
    def mask(text: str) -> str:
        """:func:`mask_text`, remembered for the last ``_MASKED_KEPT`` short texts: a card's texts (the tool,
        the requester, the reason, the outcome) are masked again on every copy and every edit."""
        if len(text) > _MASKED_LONGEST:
            return mask_text(text)
        masked = _MASKED.get(text)
        if masked is None:
            masked = mask_text(text)
            if len(_MASKED) >= _MASKED_KEPT:
                _MASKED.clear()
            _MASKED[text] = masked
        return masked

    def redact(self, value: Any) -> Any:
        return redact(value, self.extra)

    def __repr__(self) -> str:
        return f"Redaction(extra={self.extra!r})"


#: The rule with no extra names (what renderers and cards use).
STANDARD: Final = Redaction()

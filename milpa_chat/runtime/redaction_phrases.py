"""Secrets introduced by words: ``my password is X``, ``the PIN is 1234``, ``api key: X``, ``token X``.

Part of :mod:`milpa_chat.runtime.redaction` (which calls :func:`spans` from ``mask_text``); the rule:

**The lead-in** is a secret word, any case, singular or plural: ``password``, ``passwd``, ``pwd``,
``passphrase``, ``passcode``, ``token``, ``secret``, ``credential``/``creds``, ``PIN``, ``SSN``,
``OTP``, ``CVV``/``CVC``, and ``key`` after a qualifier (``api key``, ``API-key``, ``apikey``,
``secret key``, ``private key``...). A qualifier glued on is the same word (``dbpassword``,
``accesstoken``). It may be followed by ``code``/``number``/``value``/``string`` (``pin code``,
``SSN number``). A token counter is not a lead-in (``max tokens``, ``number of tokens``).

**The value** follows in one of two ways:

* *Introduced* by ``is``, ``was``, ``are``, ``were``, ``would be``/``will be``/``should be``,
  ``has been``, ``:``, ``=`` (optionally ``now``/``still``/``set to``/``changed to``
  after the verb, and optionally ``for <name>``/``of <name>`` before it: ``the password for alice is
  X``). The value is masked unless it is prose: a plain word (letters only, in one case) that is
  common (``required``, ``missing``, ``too``, ``the``...) or ends like one (``-ed``, ``-ing``,
  ``-ly``, ``-able``), or a number followed by a unit (``is 8 characters``, ``must be 1-256 characters``).
* *Directly* after ``password``/``pwd``/``passphrase``/``passcode``/``token``/``credentials``/an
  ``api key`` (``pwd X``, ``token X``): masked only when it looks like a secret, six characters or
  more and not a plain word (it has a digit, a symbol, or mixed case: ``hunter2``, ``rifFCI8m``), not
  opening with a bracket or ``@`` (``the bot token (TELEGRAM_TOKEN)``, ``token @BotFather gave you``)
  and not a path or file name (``--tokens tokens.json``);
  after ``PIN``/``SSN``/``OTP``/``CVV`` only when it is a number of three digits or more (``PIN
  1234``; ``the PIN pad`` is kept).

A value is one run of non-space characters (closing punctuation such as ``.``, ``,`` and ``)`` is
kept outside the mask), or the text between quotes (``"..."``, ``'...'``, backquotes, typographic
quotes), which may hold spaces. The words stay: ``my password is ***REDACTED***``.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["LEAD", "spans"]

#: Each secret word as written (singular or plural) -> (its stem, its kind: see :func:`_lead_kind`).
_LEADS: Final = {
    **{w + s: (w, "password") for w in ("password", "passwd", "pwd", "passphrase", "passcode", "token", "credential")
       for s in ("", "s")},
    "creds": ("cred", "password"), "secret": ("secret", "strong"), "secrets": ("secret", "strong"),
    "key": ("key", "password"), "keys": ("key", "password"),
    **{w + s: (w, "numeric") for w in ("pin", "ssn", "otp", "cvv", "cvc", "cvv2") for s in ("", "s")},
}  # fmt: skip
_GLUED: Final = frozenset({"password", "passwd", "passphrase", "passcode", "token", "secret", "key"})
#: A secret word of :data:`_LEADS` that ends there ("keyboard", "opinion", "passenger" are other words):
#: one factored pattern, so that text is scanned once, in C.
LEAD: Final = re.compile(
    r"(?:pass(?:w(?:ords?|ds?)|phrases?|codes?)|pwds?|tokens?|secrets?|keys?|cred(?:entials?|s)|pins?|ssns?|otps?"
    r"|cv(?:v2?|c)s?)(?![^\W_])"
)
_QUALIFIERS: Final = frozenset({
    "api", "access", "secret", "private", "master", "encryption", "decryption", "client", "signing", "session",
    "auth", "oauth", "ssh", "gpg", "pgp", "hmac", "license", "licence", "account", "service", "app", "webhook",
    "bot", "admin", "root", "shared", "deploy", "recovery", "wallet", "seed", "refresh", "bearer", "id", "db",
    "wifi", "user", "personal", "github", "slack", "stripe", "openai", "aws", "jwt", "csrf", "login", "email",
})  # fmt: skip
_COUNTERS: Final = frozenset({
    "max", "min", "maximum", "minimum", "total", "prompt", "completion", "input", "output", "cached", "reasoning",
    "remaining", "used", "num", "number", "of", "many", "few", "more", "fewer", "per", "extra", "llm",
})  # fmt: skip
_VERB: Final = r"(?:is|was|are|were|equals|(?:would|will|should|must|shall|could|might|may)[ \t]+be|ha[sd][ \t]+been)"
#: What follows a secret word up to its value: ``code``/``number``..., then ``for <name>`` and an
#: introducing word or sign (``is``, ``:``, ``=``...), or only spaces (group ``weak``). One match, in C.
_AFTER: Final = re.compile(
    r"(?:[ \t_-](?:code|number|no|num|value|string)s?(?![a-z0-9]))?"
    r"(?:(?:[ \t]+(?:for|of|on|at|to)[ \t]+(?:(?:the|my|our|your|their|this|that|his|her)[ \t]+)?[^\s:=\"'`]+)?"
    r"(?:[ \t]*(?:(?P<colon>:)|=)[ \t]*"
    rf"|[ \t]+{_VERB}(?![a-z0-9])"
    r"(?:[ \t]+(?:now|still|just|actually|always|set[ \t]+to|changed[ \t]+to|reset[ \t]+to))?[ \t]*:?[ \t]*)"
    r"|(?P<weak>[ \t]+))(?=\S)"
)
_QUOTES: Final = {'"': '"', "'": "'", "`": "`", "“": "”", "‘": "’", "«": "»", "„": "“", "”": "”"}
_CLOSING: Final = frozenset(".,;:!?)]}>*\"'`”’»…")
_BARE: Final = re.compile(r"\S{1,512}")
_ALNUM: Final = re.compile(r"[^\W_]")
REDACTED: Final = "***REDACTED***"  # redaction.REDACTED (that module imports this one)
_PLAIN: Final = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_NAME: Final = re.compile(r"[^\W\d]+")  # letters and underscores: a name, not a value
_AMOUNT: Final = re.compile(r"[0-9]{1,4}(?:[.,-][0-9]{1,4})?")  # "8 characters", "1-256 characters"
_FILE: Final = re.compile(
    r"(?:~|\.{1,2})?/\S*|[\w.-]+\.(?:json|toml|ya?ml|txt|env|pem|key|crt|cfg|ini|conf|csv|py|md|log|db|sqlite)",
    re.IGNORECASE,
)  # a path or a file name: "--tokens tokens.json"
_RUN: Final = re.compile(r"[A-Za-z0-9]{8,}")
_NUMBER: Final = re.compile(r"[0-9](?:[0-9 -]*[0-9])?")
_UNITS: Final = re.compile(
    r"[ \t]+(?:characters?|chars?|digits?|letters?|symbols?|numbers?|words?|bytes?|bits?|long|old|or|to|and|"
    r"seconds?|minutes?|hours?|days?|weeks?|months?|years?|times?)(?![a-z])",
    re.IGNORECASE,
)
_PROSE_ENDINGS: Final = ("ed", "ing", "ly", "able", "ible", "ful", "less", "ous", "ive", "tion", "ment", "ness")
_COMMON_WORDS: Final = """
a an the this that these those it its my your our their his her mine yours ours theirs me you we they he she
no not none null nil empty blank unset set missing required optional mandatory needed necessary invalid valid
incorrect correct wrong right bad good weak strong short long too very so also still now already never always
just only same different new old temporary temp default expired revoked reset changed updated saved stored hidden
masked redacted encrypted hashed secret private public safe unsafe secure insecure sensitive ok okay fine true
false yes unknown known available unavailable unchanged at in on of for to from with by as if when where which who
what how why about above below under over into inside within without between after before being been be do does
did can could will would should must may might shall there here and or but than then either neither both each
every all any some many more most less least few several other another such one two three four five six seven
eight nine ten first last next previous like case used something anything nothing whatever easy hard simple complex
obvious unique random active inactive pending generated provided given shown sent attached following follows
lost gone forgotten leaked compromised exposed expiring rotating working broken stale fresh current same
enough mandatory sufficient insufficient unavailable real fake dummy example sample placeholder test bearer
basic digest none undefined unspecified usually typically probably definitely actually really correctly
bound kept held made done read found built stolen tied scoped single opaque unique per only
"""
#: Words that follow "password is" in prose (an introduced value that is one of them is kept).
_COMMON: Final = frozenset(_COMMON_WORDS.split())
Span = tuple[int, int]


def spans(text: str, low: str) -> list[Span]:
    """Where the values introduced by secret words are in ``text`` (``low`` is ``text`` lower-cased,
    position for position)."""
    found: list[Span] = []
    for word in LEAD.finditer(low):
        span = _value_after(text, low, word.start(), word.end())
        if span is not None:
            found.append(span)
    return found


def _value_after(text: str, low: str, at: int, end: int) -> Span | None:
    stem, lead = _LEADS[low[at:end]]
    kind: str | None = lead
    if stem in ("token", "key") or (at and low[at - 1].isalnum()):
        kind = _lead_kind(low, at, stem, lead)
    after = None if kind is None else _AFTER.match(low, end)
    if after is None:
        return None
    weak = after.group("weak") is not None
    value = None if weak and kind == "strong" else _value(text, after.end())
    if value is None:
        return None
    if not weak:
        hide = not (_prose(text, *value) or (after.group("colon") and _sentence(text, *value)))
    else:
        shown = text[value[0] : value[1]]
        hide = _NUMBER.fullmatch(shown) is not None and _digits(shown) >= 3 if kind == "numeric" else _looks(shown)
    return value[:2] if hide else None


def _lead_kind(low: str, at: int, stem: str, kind: str) -> str | None:
    """``kind`` for the secret word at ``at``, unless it is glued to a word that is not a qualifier
    (``spin``, ``monkey``), counts tokens (``max tokens``) or is a ``key`` without a qualifier."""
    if at and low[at - 1].isalnum():  # glued: "dbpassword", "accesstoken", "apikey"
        start = at
        while start > 0 and low[start - 1].isalnum() and at - start < 16:
            start -= 1
        return kind if stem in _GLUED and low[start:at] in _QUALIFIERS and _at_start(low, start) else None
    before = _word_before(low, at)
    if stem == "token" and before in _COUNTERS:
        return None
    if stem == "key":
        return kind if before in _QUALIFIERS else None
    return kind


def _at_start(low: str, at: int) -> bool:
    return at == 0 or not low[at - 1].isalnum()


def _word_before(low: str, start: int) -> str:
    """The word before ``start`` across one separator (``api key``, ``API-key``, ``api_key``)."""
    if start < 2 or low[start - 1] not in " \t-_":
        return ""
    end = start - 1
    begin = end
    while begin > 0 and low[begin - 1].isalnum() and end - begin < 24:
        begin -= 1
    return low[begin:end]


def _value(text: str, at: int) -> tuple[int, int, bool] | None:
    """``(start, end, quoted)`` of the value starting at ``at``; ``None`` when there is none."""
    if text.startswith(REDACTED, at):
        return None  # masked already (a known format, a key=value)
    close = _QUOTES.get(text[at : at + 1])
    if close is not None:
        limit = min(len(text), at + 512)
        end = text.find(close, at + 1, limit)
        while end != -1:  # a closing quote that ends the value (not one inside it)
            after = text[end + 1 : end + 2]
            if not after or after.isspace() or after in _CLOSING:
                return (at + 1, end, True) if end > at + 1 else None
            end = text.find(close, end + 1, limit)
    bare = _BARE.match(text, at)
    if bare is None:
        return None
    end = bare.end()
    while end > at + 1 and text[end - 1] in _CLOSING:
        end -= 1
    return at, end, False


def _prose(text: str, start: int, end: int, quoted: bool) -> bool:
    """Whether an introduced value is words, not a secret (``required``, ``too short``, ``8 characters``)."""
    value = text[start:end]
    if _ALNUM.search(value) is None:
        return True  # nothing to hide
    if quoted:
        return False
    if _PLAIN.fullmatch(value) and (value.islower() or value.istitle() or value.isupper()):
        word = value.lower()
        return word in _COMMON or (len(word) > 3 and word.endswith(_PROSE_ENDINGS))
    return _AMOUNT.fullmatch(value) is not None and _UNITS.match(text, end) is not None


def _sentence(text: str, start: int, end: int, quoted: bool) -> bool:
    """``password: must be at least 8 characters``: after a colon, a word followed by more words is prose."""
    after = text[end : end + 2]
    return (
        not quoted
        and _PLAIN.fullmatch(text[start:end]) is not None
        and len(after) == 2
        and after[0] == " "
        and after[1].isalpha()
    )


def _looks(value: str) -> bool:
    """A value written directly after a secret word is a secret when it looks like one."""
    if len(value) < 6 or (_FILE.fullmatch(value) and not _keyish(value)):
        return False
    if value[0] in "([{<@":  # "(TELEGRAM_TOKEN)", "<token>", "@BotFather" name a place; "[b1kPJ9w..." is a value
        return _NAME.fullmatch(value[1:].rstrip(")]}>")) is None and _looks(value[1:])
    if value.isalpha():  # a word in one case is a word ("bucket", "Reset"); mixed case is not ("rifFCIm")
        return not (value.islower() or value.istitle() or value.isupper())
    return _PLAIN.fullmatch(value) is None and _ALNUM.search(value) is not None


def _keyish(value: str) -> bool:
    """Whether ``value`` holds a run of 8 or more letters and digits with a digit, a capital and a small letter:
    what a generated secret looks like, even where the rest looks like a path (``passphrase /0Fz30klK``)."""
    for run in _RUN.findall(value):
        if any(c.isdigit() for c in run) and any(c.isupper() for c in run) and any(c.islower() for c in run):
            return True
    return False


def _digits(value: str) -> int:
    return sum(c.isdigit() for c in value)

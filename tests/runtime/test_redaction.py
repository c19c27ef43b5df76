"""Redaction: secret-named keys at any depth, any case or separator, never reach the output."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from milpa_chat.runtime.audit import REDACTED, is_sensitive_key, redact

SECRET_WORDS = [
    "password",
    "token",
    "secret",
    "api_key",
    "apiKey",
    "Authorization",
    "client_secret",
    "access_token",
    "private_key",
    "passwd",
]


def _variants(word: str) -> st.SearchStrategy[str]:
    parts = [p for p in re.split(r"[_\-]|(?<=[a-z])(?=[A-Z])", word) if p]
    return st.tuples(
        st.sampled_from(["_", "-", "", ".", " "]),
        st.lists(st.booleans(), min_size=len(parts), max_size=len(parts)),
    ).map(lambda sep_up: sep_up[0].join(p.upper() if up else p.lower() for p, up in zip(parts, sep_up[1], strict=True)))


secret_keys = st.sampled_from(SECRET_WORDS).flatmap(_variants)
secret_values = st.text(alphabet="ABCDEFGHJKLMNPQRSTUVWXYZ23456789", min_size=12, max_size=20).map(lambda s: "S3CR" + s)
plain_keys = st.sampled_from(["name", "page", "query", "amount", "note_id", "tokens_used", "max_tokens", "key"])


def _tree(secret: str) -> st.SearchStrategy[object]:
    leaf = st.one_of(st.integers(), st.text(max_size=10), st.none())
    return st.recursive(
        st.one_of(
            leaf,
            st.fixed_dictionaries({}, optional={}).flatmap(
                lambda _: st.tuples(secret_keys).map(lambda k: {k[0]: secret})
            ),
        ),
        lambda children: st.one_of(
            st.lists(children, max_size=3),
            st.dictionaries(st.one_of(plain_keys, secret_keys), children, max_size=3),
            st.tuples(secret_keys, children).map(lambda kv: {kv[0]: kv[1]}),
        ),
        max_leaves=12,
    )


@settings(max_examples=400)
@given(st.data())
def test_no_secret_value_survives_redaction(data: st.DataObject) -> None:
    secret = data.draw(secret_values)
    tree = data.draw(_tree(secret))
    out = json.dumps(redact({"payload": tree, "Api-Key": secret}), default=str)
    assert secret not in out
    assert REDACTED in out


@settings(max_examples=200)
@given(secret_keys)
def test_every_spelling_of_a_secret_key_is_sensitive(key: str) -> None:
    assert is_sensitive_key(key)


def test_ordinary_keys_are_kept() -> None:
    value = {"name": "ana", "tokens_used": 5, "max_tokens": 10, "key": "agent.treeBudget", "_ctx": object()}
    assert redact(value) == {"name": "ana", "tokens_used": 5, "max_tokens": 10, "key": "agent.treeBudget"}


def test_headers_written_as_pairs_hide_their_secret_values() -> None:
    value = {
        "headers": [("Accept", "json"), ("Authorization", "Bearer x"), ["X-Api-Key", "k1"], ["password", "a", "b"]],
        "har": [{"name": "Cookie", "value": "sid=1"}, {"name": "page", "value": 2}, {"key": "token", "value": "t"}],
    }
    assert redact(value) == {
        "headers": [["Accept", "json"], ["Authorization", REDACTED], ["X-Api-Key", REDACTED], ["password", "a", "b"]],
        "har": [
            {"name": "Cookie", "value": REDACTED},
            {"name": "page", "value": 2},
            {"key": "token", "value": REDACTED},
        ],
    }


def test_lists_and_nesting() -> None:
    value = {"items": [{"password": "p"}, {"nested": {"Authorization": "Bearer x"}}], "t": ("a", {"TOKEN": 1})}
    assert redact(value) == {
        "items": [{"password": REDACTED}, {"nested": {"Authorization": REDACTED}}],
        "t": ["a", {"TOKEN": REDACTED}],
    }


def test_a_card_text_is_masked_every_time_it_is_shown() -> None:
    """Renderers mask each text they show (``Redaction.mask``, remembered for short texts): the second and
    later showings of a text are masked as the first, a long text too, and a clean text stays as it is."""
    from milpa_chat.runtime.redaction import STANDARD

    secret = "my password is rifFCI8m"
    long_secret = "note " * 300 + secret
    for _ in range(3):
        assert STANDARD.mask(secret) == "my password is ***REDACTED***"
        assert STANDARD.mask(long_secret).endswith("my password is ***REDACTED***")
        assert STANDARD.mask("Deleted note 3") == "Deleted note 3"
    texts = [f"token number {i}: sk-{i:04d}abcdefghijklmnopqrstuv" for i in range(3000)]  # more than it keeps
    assert all("sk-" not in STANDARD.mask(t) for t in texts + texts[:5])

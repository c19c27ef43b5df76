"""The guard decodes an interaction's form body (``payload=<percent-encoded JSON>``) itself: to the very JSON object
bolt's own parsing makes of it, for bodies as Slack sends them and for bodies Slack never would (those it cannot
decode exactly are left to bolt). bolt's own signature check lets through only what the guard checked."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.request.internals import parse_body

from milpa_chat.bots.slack import SlackBot
from milpa_chat.bots.slack_guard import GUARDED, SlackGuard, form_payload
from milpa_chat.testing import ManualClock

from .conftest_slack import SECRET, TOKEN, Tools, memory_assistant

FORM = {"content-type": "application/x-www-form-urlencoded"}
TEXT = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=12)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=16,
)
#: Bytes that matter to percent-decoding, JSON and the decoder's own escapes.
TRICKY = '%+\\x0123456789abcdefABCDEF{}[]":, uéÿ\u2603'


def bolt(body: bytes) -> Any:
    """What bolt makes of a form body (the exception's type when it cannot)."""
    try:
        return parse_body(body.decode("utf-8"), "application/x-www-form-urlencoded")
    except Exception as exc:
        return type(exc)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(TEXT, JSON_VALUES, min_size=1, max_size=5), st.booleans(), st.booleans())
def test_a_payload_as_slack_encodes_it_decodes_to_what_bolt_makes_of_it(
    payload: dict[str, Any], ascii_json: bool, plus: bool
) -> None:
    encode = quote_plus if plus else quote
    body = b"payload=" + encode(json.dumps(payload, ensure_ascii=ascii_json)).encode()
    assert form_payload(body, FORM) == payload == bolt(body)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=TRICKY, max_size=40), st.sampled_from(["{}", '{{"k": "{}"}}', '{{"{}": 1}}', "{}%"]))
def test_any_other_body_decodes_as_bolt_decodes_it_or_is_left_to_bolt(raw: str, shape: str) -> None:
    for inner in (raw, quote(raw, safe="%+\\"), raw.replace("\\", "%5C")):
        body = ("payload=" + shape.format(inner)).encode()
        decoded = form_payload(body, FORM)
        if decoded is not None:
            assert decoded == bolt(body), body


@pytest.mark.parametrize(
    "body",
    [
        b"payload=%7B%22a%22%3A%22%2522%22%7D",  # an escaped '%' followed by hex digits: '%22', not a quote
        b"payload=%7B%22a%22%3A%22%25%25%2541%22%7D",
        b'payload={"a":"x\\\\y"}',  # a backslash the body did not escape (an escaped backslash in JSON)
        b'payload={"a":"\\u00e9\\n"}',
        b"payload=%7B%22a%22%3A%22b+c%2Bd%22%7D",  # '+' is a space, '%2B' a plus
        b"payload=%7B%22a%22%3A%22%E2%9C%8F%ef%b8%8f%22%7D",  # UTF-8, escapes in either case
        b"payload=%7B%22a%22%3A%22%E2%9C%22%7D",  # a broken UTF-8 sequence: U+FFFD, as urllib writes it
    ],
)
def test_bodies_slack_could_send_decode_exactly(body: bytes) -> None:
    assert form_payload(body, FORM) == bolt(body)
    assert isinstance(bolt(body), dict)


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        (b"payload=%7B%22a%22%3A%22100%%22%7D", FORM),  # a '%' that starts no escape: urllib's rule, bolt's parse
        (b"payload=%7B%22a%22%3A1%7D&payload=%7B%22b%22%3A2%7D", FORM),  # two fields: bolt's parse keeps the last
        (b"payload=", FORM),
        (b"payload=%5B1%2C2%5D", FORM),  # JSON, but no object
        (b"payload=%7Bnot-json", FORM),
        (b"token=x&payload=%7B%7D", FORM),
        ('payload={"a":"é"}'.encode(), FORM),  # not ASCII: urllib decodes it piece by piece
        (b"payload=%7B%22a%22%3A1%7D", {"content-type": "application/json"}),  # bolt reads it as JSON
    ],
)
def test_bodies_the_guard_leaves_to_bolt(body: bytes, headers: dict[str, str]) -> None:
    assert form_payload(body, headers) is None


def test_the_guards_request_is_the_one_bolt_builds() -> None:
    body = b"payload=" + quote_plus(json.dumps(_tap())).encode()
    headers = {**FORM, "x-slack-request-timestamp": "1", "x-slack-signature": "v0=0"}
    ours = SlackGuard.parse(body, "a=1", headers)
    theirs = AsyncBoltRequest(body=body.decode(), query="a=1", headers=dict(headers))
    assert isinstance(ours, AsyncBoltRequest)
    assert (ours.body, ours.raw_body, ours.mode, ours.query, ours.headers, ours.content_type) == (
        theirs.body,
        theirs.raw_body,
        theirs.mode,
        theirs.query,
        theirs.headers,
        theirs.content_type,
    )
    assert {k: v for k, v in ours.context.items() if k != GUARDED} == dict(theirs.context)
    assert (ours.lazy_only, ours.lazy_function_name) == (theirs.lazy_only, theirs.lazy_function_name)


async def test_bolt_still_checks_the_signature_of_requests_the_guard_did_not_check() -> None:
    """The guard's mark spares bolt's check only for requests the guard checked: a request dispatched to the app
    some other way, or one whose context claims the mark with another value, is verified by bolt (401)."""
    bot = SlackBot(memory_assistant(Tools(), ManualClock()), TOKEN, SECRET, base_url="http://127.0.0.1:9/api/")
    body = "payload=" + quote_plus(json.dumps(_tap()))
    now = str(int(time.time()))
    wrong = {**FORM, "x-slack-request-timestamp": now, "x-slack-signature": "v0=" + "0" * 64}
    for context in (None, {GUARDED: True}, {GUARDED: object()}):
        request = AsyncBoltRequest(body=body, headers=dict(wrong), context=context)
        assert (await bot.app.async_dispatch(request)).status == 401
    right = hmac.new(SECRET.encode(), f"v0:{now}:{body}".encode(), hashlib.sha256).hexdigest()
    request = AsyncBoltRequest(body=body, headers={**wrong, "x-slack-signature": f"v0={right}"})
    assert (await bot.app.async_dispatch(request)).status != 401
    await bot.close()


def _tap() -> dict[str, Any]:
    return {
        "type": "block_actions",
        "user": {"id": "U1", "team_id": "T1", "name": "ana"},
        "team": {"id": "T1"},
        "container": {"type": "message", "message_ts": "1.2", "channel_id": "C1"},
        "channel": {"id": "C1"},
        "actions": [{"action_id": "milpa:page:0", "value": "page:v:2", "action_ts": "3.4", "type": "button"}],
        "response_url": "http://127.0.0.1:9/response/1",
        "text": "a + b = 100% \\ é ✏️",
    }

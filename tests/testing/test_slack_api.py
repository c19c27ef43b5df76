"""The local Slack Web API server as slack_sdk sees it: answers, errors, Block Kit limits, response_url, signing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from milpa_chat.testing.slack import SlackApiServer, SlackPayloads, SlackRequest, SlackRequestSigner, block_errors

TOKEN = "xoxb-test-token"


@pytest.fixture
async def api() -> AsyncIterator[SlackApiServer]:
    async with SlackApiServer(TOKEN, team_id="T9", bot_user_id="UB", channels={"C1": "general"}) as server:
        yield server


@pytest.fixture
def client(api: SlackApiServer) -> AsyncWebClient:
    return AsyncWebClient(TOKEN, base_url=api.base_url)


async def error_of(call: Any) -> str:
    with pytest.raises(SlackApiError) as info:
        await call
    return str(info.value.response["error"])


def text(kind: str, value: str) -> dict[str, str]:
    return {"type": kind, "text": value}


def button(label: str = "Go", **extra: Any) -> dict[str, Any]:
    return {"type": "button", "text": text("plain_text", label), "action_id": "a", **extra}


def section(value: str) -> dict[str, Any]:
    return {"type": "section", "text": text("mrkdwn", value)}


INVALID = {
    "51 blocks": [{"type": "divider"}] * 51,
    "section text 3001": [section("x" * 3001)],
    "header 151": [{"type": "header", "text": text("plain_text", "h" * 151)}],
    "mrkdwn header": [{"type": "header", "text": text("mrkdwn", "h")}],
    "button text 76": [{"type": "actions", "elements": [button("b" * 76)]}],
    "mrkdwn button": [{"type": "actions", "elements": [{**button(), "text": text("mrkdwn", "b")}]}],
    "button value 2001": [{"type": "actions", "elements": [button(value="v" * 2001)]}],
    "action_id 256": [{"type": "actions", "elements": [button(action_id="a" * 256)]}],
    "block_id 256": [{"type": "divider", "block_id": "b" * 256}],
    "11 fields": [{"type": "section", "fields": [text("mrkdwn", "f")] * 11}],
    "field 2001": [{"type": "section", "fields": [text("mrkdwn", "f" * 2001)]}],
    "26 elements": [{"type": "actions", "elements": [button(action_id=f"a{i}") for i in range(26)]}],
    "no elements": [{"type": "actions", "elements": []}],
    "unknown element": [{"type": "actions", "elements": [{"type": "bogus"}]}],
    "duplicate action_id": [{"type": "actions", "elements": [button(), button()]}],
    "duplicate block_id": [{"type": "divider", "block_id": "d"}, {"type": "divider", "block_id": "d"}],
    "unknown block": [{"type": "bogus"}],
    "empty text": [section("")],
    "string text": [{"type": "section", "text": "plain string"}],
    "section without text": [{"type": "section"}],
}


@pytest.mark.parametrize("blocks", INVALID.values(), ids=INVALID.keys())
async def test_invalid_blocks_are_refused(api: SlackApiServer, client: AsyncWebClient, blocks: Any) -> None:
    assert await error_of(client.chat_postMessage(channel="C1", text="t", blocks=blocks)) == "invalid_blocks"
    assert api.messages("C1") == [] and api.calls("chat.postMessage")[0].response["errors"]  # type: ignore[index]


async def test_blocks_at_the_limits_are_accepted(api: SlackApiServer, client: AsyncWebClient) -> None:
    blocks = [
        section("x" * 3000),
        {"type": "header", "text": text("plain_text", "h" * 150)},
        {"type": "section", "fields": [text("mrkdwn", "f" * 2000)] * 10},
        {
            "type": "actions",
            "elements": [button("b" * 75, value="v" * 2000, action_id=f"{i:0255d}") for i in range(25)],
        },
        {"type": "rich_text", "elements": [{"type": "rich_text_section", "elements": [text("text", "rich")]}]},
        {"type": "context", "elements": [text("mrkdwn", "ctx")]},
    ]
    blocks += [{"type": "divider"}] * (50 - len(blocks))
    resp = await client.chat_postMessage(channel="C1", text="t", blocks=blocks)
    stored = api.message("C1", resp["ts"])
    assert len(stored.blocks) == 50 and all(b["block_id"] for b in stored.blocks)  # Slack fills in block ids
    assert block_errors(stored.blocks) == []


async def test_message_shapes_and_edit_history(api: SlackApiServer, client: AsyncWebClient) -> None:
    posted = await client.chat_postMessage(channel="C1", text="v1", blocks=[section("one")])
    assert posted["channel"] == "C1" and posted["message"]["bot_id"] == "B0BOT" and posted["message"]["user"] == "UB"
    ts = posted["ts"]
    updated = await client.chat_update(channel="C1", ts=ts, text="v2")
    assert updated["ts"] == ts and updated["message"]["blocks"][0]["text"]["text"] == "one"  # blocks kept
    await client.chat_update(channel="C1", ts=ts, text="v3", blocks=[])
    message = api.message("C1", ts)
    assert [v.text for v in message.history] == ["v1", "v2"] and message.text == "v3" and message.blocks == []
    assert message.edited_ts is not None and message.edited_ts > ts
    await client.chat_delete(channel="C1", ts=ts)
    assert api.messages("C1") == [] and api.messages("C1", include_deleted=True) == [message]
    assert await error_of(client.chat_update(channel="C1", ts=ts, text="v4")) == "message_not_found"


@pytest.mark.filterwarnings("ignore:The top-level `text` argument is missing")
async def test_errors(api: SlackApiServer, client: AsyncWebClient) -> None:
    assert await error_of(client.chat_postMessage(channel="C404", text="x")) == "channel_not_found"
    assert await error_of(client.chat_postMessage(channel="C1")) == "no_text"
    assert await error_of(client.chat_postMessage(channel="C1", text="x" * 40_001)) == "msg_too_long"
    assert await error_of(client.chat_update(channel="C1", ts="1.000001", text="x")) == "message_not_found"
    theirs = api.add_user_message("C1", "mine", user="U5")
    assert await error_of(client.chat_update(channel="C1", ts=theirs.ts, text="x")) == "cant_update_message"
    assert await error_of(client.chat_delete(channel="C1", ts=theirs.ts)) == "cant_delete_message"
    assert await error_of(AsyncWebClient("xoxb-wrong", base_url=api.base_url).auth_test()) == "invalid_auth"
    assert await error_of(AsyncWebClient(base_url=api.base_url).auth_test()) == "not_authed"
    api.fail_next("chat.postMessage", "internal_error")
    assert await error_of(client.chat_postMessage(channel="C1", text="x")) == "internal_error"
    assert (await client.chat_postMessage(channel="C1", text="x"))["ok"]
    assert await error_of(client.api_call("chat.nothing")) == "unknown_method"


async def test_rate_limit_answers_429_with_retry_after(api: SlackApiServer, client: AsyncWebClient) -> None:
    api.rate_limit("chat.update", times=2, retry_after=3)
    await client.chat_postMessage(channel="C1", text="not limited")
    for _ in range(2):
        with pytest.raises(SlackApiError) as info:
            await client.chat_update(channel="C1", ts="1.1", text="x")
        assert info.value.response.status_code == 429 and info.value.response.headers["Retry-After"] == "3"
    assert await error_of(client.chat_update(channel="C1", ts="1.1", text="x")) == "message_not_found"


async def test_form_bodies_and_token_field(api: SlackApiServer) -> None:
    blocks = json.dumps([section("from a form")])
    async with aiohttp.ClientSession() as http:
        form = {"token": TOKEN, "channel": "#general", "text": "hi", "blocks": blocks}
        async with http.post(api.base_url + "chat.postMessage", data=form) as res:
            answer = await res.json()
        bad = {"token": TOKEN, "channel": "C1", "text": "hi", "blocks": "[not json"}
        async with http.post(api.base_url + "chat.postMessage", data=bad) as res:
            assert (await res.json())["error"] == "invalid_blocks_format"
        async with http.get(api.base_url + "conversations.info", params={"token": TOKEN, "channel": "C1"}) as res:
            info = await res.json()
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        async with http.post(api.base_url + "chat.postMessage", data="{oops", headers=headers) as res:
            assert (await res.json())["error"] == "invalid_json"
    assert (
        answer["ok"] and answer["channel"] == "C1" and api.messages("C1")[0].blocks[0]["text"]["text"] == "from a form"
    )
    assert api.calls("chat.postMessage")[0].content_type == "application/x-www-form-urlencoded"
    assert info["channel"]["name"] == "general" and info["channel"]["is_channel"]


async def test_ephemeral_dm_and_conversations(api: SlackApiServer, client: AsyncWebClient) -> None:
    resp = await client.chat_postEphemeral(channel="C1", user="U2", text="only you")
    assert api.ephemeral_messages("U2")[0].ts == resp["message_ts"] and api.messages("C1") == []
    assert api.ephemeral_messages("U3") == []
    dm = await client.chat_postMessage(channel="U2", text="hello in private")
    assert dm["channel"] == "D2" and api.workspace.channels["D2"].to_api()["user"] == "U2"
    assert (await client.conversations_open(users="U2"))["channel"]["id"] == "D2"
    assert await error_of(client.conversations_info(channel="C404")) == "channel_not_found"


async def test_response_url_semantics(api: SlackApiServer, client: AsyncWebClient) -> None:
    card = await client.chat_postMessage(channel="C1", text="card")
    url = api.new_response_url("C1", user="U2", message_ts=card["ts"])
    hook = AsyncWebhookClient(url)
    assert (await hook.send(text="only for U2")).body == "ok"
    assert api.ephemeral_messages("U2")[0].text == "only for U2"
    await hook.send_dict({"text": "for all", "response_type": "in_channel", "thread_ts": card["ts"]})
    assert api.messages("C1", thread_ts=card["ts"])[0].text == "for all"
    await hook.send(text="replaced", replace_original=True)
    assert api.message("C1", card["ts"]).text == "replaced"
    bad = await hook.send(text="x", blocks=[section("")])
    assert (bad.status_code, bad.body) == (400, "invalid_blocks")
    await hook.send_dict({"delete_original": True})
    assert [m.text for m in api.messages("C1")] == ["for all"]
    assert (await hook.send(text="fifth")).body == "ok"  # the refused post did not count
    used = await hook.send(text="sixth")
    assert (used.status_code, used.body) == (404, "used_url")
    unknown = await AsyncWebhookClient(api.url + "/response/nope").send(text="x")
    assert (unknown.status_code, unknown.body) == (404, "expired_url")


async def test_command_response_url_replaces_its_own_ephemeral_answer(api: SlackApiServer) -> None:
    payload = SlackPayloads(api=api).command("/deploy", user="U2", channel="C1").payload
    hook = AsyncWebhookClient(payload["response_url"])
    await hook.send(text="working...")
    await hook.send(text="done", replace_original=True)
    assert [m.text for m in api.ephemeral_messages("U2")] == ["done"]


async def test_views_open_needs_a_fresh_trigger(api: SlackApiServer, client: AsyncWebClient) -> None:
    view = {"type": "modal", "title": text("plain_text", "Approve"), "blocks": [section("sure?")]}
    trigger = api.new_trigger_id()
    opened = await client.views_open(trigger_id=trigger, view=view)
    assert opened["view"]["id"].startswith("V") and api.views()[0].view["title"]["text"] == "Approve"
    assert await error_of(client.views_open(trigger_id=trigger, view=view)) == "exchanged_trigger_id"
    assert await error_of(client.views_open(trigger_id="1.2.3", view=view)) == "invalid_trigger_id"
    too_many = {**view, "blocks": [{"type": "divider"}] * 101}
    assert await error_of(client.views_open(trigger_id=api.new_trigger_id(), view=too_many)) == "invalid_blocks"
    api.workspace.trigger_ttl = 0.0
    assert await error_of(client.views_open(trigger_id=api.new_trigger_id(), view=view)) == "expired_trigger_id"


async def test_wait_for_times_out_with_the_recent_calls(api: SlackApiServer, client: AsyncWebClient) -> None:
    await client.auth_test()
    with pytest.raises(TimeoutError, match=r"auth\.test"):
        await api.wait_for(lambda: api.messages("C1"), timeout=0.05)


def test_signatures_match_slack_sdk_verifier() -> None:
    signer, verifier = SlackRequestSigner("s3cret"), SignatureVerifier("s3cret")
    request = SlackPayloads().command("/deploy", "prod")
    good = signer.sign(request)
    assert verifier.is_valid(good.body, str(good.timestamp), good.signature)
    assert verifier.generate_signature(timestamp=str(good.timestamp), body=good.body) == good.signature
    stale, forged = signer.sign(request, stale=True), signer.sign(request, bad_signature=True)
    assert not verifier.is_valid(stale.body, str(stale.timestamp), stale.signature)
    assert not verifier.is_valid(forged.body, str(forged.timestamp), forged.signature)
    retry = signer.sign(request, retry_num=1).bolt_kwargs()["headers"]
    assert retry["x-slack-retry-num"] == ["1"] and retry["x-slack-retry-reason"] == ["http_timeout"]
    raw = signer.sign("a=1")
    assert raw.request == SlackRequest("raw", "a=1", "application/x-www-form-urlencoded", {})


def test_payload_shapes() -> None:
    payloads = SlackPayloads(team_id="T7")
    command = payloads.command("/deploy", "prod", user="U2", channel="C3").payload
    assert command["team_id"] == "T7" and command["command"] == "/deploy" and "response_url" not in command
    action = payloads.block_action(
        {"action_id": "approve", "value": "v"}, block_id="b", user="U2", channel="C3", message_ts="1.2"
    ).payload
    assert action["type"] == "block_actions" and action["user"] == {
        "id": "U2",
        "username": "u2",
        "name": "u2",
        "team_id": "T7",
    }
    assert action["actions"][0]["type"] == "button" and action["container"]["message_ts"] == "1.2"
    event = payloads.direct_message("hi", user="U2").payload
    assert event["event"]["channel"] == "D2" and event["event"]["channel_type"] == "im"
    assert event["authorizations"][0]["user_id"] == "U0BOT"

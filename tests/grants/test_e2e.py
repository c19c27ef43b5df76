"""End to end through the real python-telegram-bot and slack-bolt against the local servers, on a SQLite file.

A developer asks on Telegram; the approver drafts the grant from the card with his Slack identity (what the
"Always allow…" tap does; the tap itself is tested on the chat core); a second person signs with a real tap
on the signature's own card in the Telegram approvers' group; the next matching call runs without a card
and cites the grant; a call on other content gets a card; a suspension by the Slack approver stops the next
call on Telegram; and new objects on the same file (a restart) find all of it standing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from milpa_chat.bots.slack import SlackBot
from milpa_chat.bots.telegram import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.standing import GrantChat, GrantDesk
from milpa_chat.store.sqlite import SqliteStore
from milpa_chat.testing import BotApiServer, TelegramUser
from milpa_chat.testing.slack import SlackApiServer, SlackEvents, serve_bolt_app
from tests.grants.house import PUBLISHED, house

TOKEN, SECRET, TEAM = "xoxb-grants", "grants-signing-secret", "T1"
WORK, APPROVERS = "C0WORK", "C0APPROVE"
ABEL = "U2001"  # the release approver, on Slack
RITA = TelegramUser(100, "Rita", "rita")  # the developer, on Telegram
SARA = TelegramUser(300, "Sara", "sara")  # who signs grants, on Telegram
TG_APPROVERS = -900
IDENTITIES: dict[str, Any] = {
    "roles": {"dev": ["release:publish"], "lead": ["release:approve", "grants:sign"], "signer": ["grants:sign"]},
    "users": {"telegram:100": ["dev"], "telegram:300": ["signer"], f"slack:{TEAM}:{ABEL}": ["lead"]},
    "approvers": {"telegram": [str(TG_APPROVERS)], "slack": [APPROVERS]},
}


@dataclass
class World:
    tg: BotApiServer
    api: SlackApiServer
    slack: SlackEvents
    slack_bot: SlackBot
    assistant: Assistant
    desk: GrantDesk
    chat: GrantChat


@asynccontextmanager
async def platforms() -> AsyncIterator[tuple[BotApiServer, SlackApiServer]]:
    async with BotApiServer() as tg, SlackApiServer(TOKEN, team_id=TEAM, channels=[WORK, APPROVERS]) as api:
        tg.group(TG_APPROVERS, "Approvers", members=[SARA])
        yield tg, api


@asynccontextmanager
async def world(db: Path, tg: BotApiServer, api: SlackApiServer) -> AsyncIterator[World]:
    """The kit in one process: a store on ``db``, the house, the assistant and both real bots."""
    store = SqliteStore(db)
    registry, desk = house(store)
    assistant = Assistant(registry, Identities.from_dict(IDENTITIES))
    chat = GrantChat(assistant, desk)
    telegram_bot = TelegramBot(assistant, tg.token, tg.base_url, sweep_interval=None)
    slack_bot = SlackBot(assistant, TOKEN, SECRET, api.base_url)
    await telegram_bot.start(poll_timeout=1)
    try:
        async with serve_bolt_app(slack_bot.web_app()) as url, SlackEvents(url, SECRET, api=api) as slack:
            yield World(tg, api, slack, slack_bot, assistant, desk, chat)
    finally:
        await telegram_bot.stop()
        await store.close()


async def publish(w: World, archive: str) -> str:
    """Rita asks on Telegram; what she is told back."""
    asked = await w.tg.send_message(RITA.id, RITA, f"/release_publish {archive} stable")
    return (await w.tg.wait_for_message(RITA.id, since=asked)).text or ""


async def test_always_allow_signed_by_a_second_person_lends_the_next_call_and_a_stop_stands_a_restart(
    tmp_path: Path,
) -> None:
    db = tmp_path / "house.db"
    async with platforms() as (tg, api):
        grant_id = await _first_process(db, tg, api)
        async with world(db, tg, api) as w:  # a restart: new objects on the same file
            again = await w.desk.get(grant_id)
            assert again is not None and again.state == "suspended" and again.uses == 1
            told = await publish(w, "clean.tgz")
            assert "suspended: a leak was reported" in told and len(PUBLISHED) == 1


async def _first_process(db: Path, tg: BotApiServer, api: SlackApiServer) -> str:
    async with world(db, tg, api) as w:
        await w.assistant.registry.call(
            "release_scan",
            {"archive": "clean.tgz", "strict": True},
            w.assistant.identities.context_for("telegram", _user(RITA), str(RITA.id)),
        )
        await w.assistant.registry.call(
            "reports_watch", {}, w.assistant.identities.context_for("telegram", _user(RITA), str(RITA.id))
        )
        told = await publish(w, "clean.tgz")
        assert "approv" in told.lower() and PUBLISHED == []
        card = await w.api.wait_for_message(APPROVERS)
        [first] = await w.assistant.approvals.listing(state="pending")

        # the approver drafts from the card (as "Always allow…" does, with his Slack identity)
        abel = w.assistant.identities.context_for("slack", _slack_user(ABEL), APPROVERS)
        record, signature = await w.desk.draft_from(first.id, abel, via="slack")
        await w.assistant.outbox.deliver(signature)
        await w.tg.wait_until(lambda: _signature_card(w) is not None, what="the signature's card")
        tg_signature = _signature_card(w)
        assert '"channel":"stable"' in (tg_signature.text or "")  # the whole text, in canonical spelling
        assert card.ts  # the original card is still there, undecided

        update = await w.tg.tap_button(tg_signature, _label(tg_signature, "Approve"), SARA)  # the second step
        await w.tg.wait_until(lambda: w.tg.callback_query(update).answered)
        signed = await w.desk.get(record.id)
        assert signed is not None and signed.state == "in_force" and signed.signer == "Sara"
        assert signed.data["signed_by"]["via"] == "telegram"

        await w.slack_bot.drain()
        await _delivered(w)  # the tap was answered before its run: its card edits come after the answer
        cards_before = _cards(w)
        told = await publish(w, "clean.tgz")
        assert "published clean.tgz to stable" in told and PUBLISHED == [("clean.tgz", "stable")]
        await w.slack_bot.drain()
        assert _cards(w) == cards_before  # no card for a lent call

        told = await publish(w, "other.tgz")  # other content: never scanned, so it gets a card
        assert "approv" in told.lower() and len(PUBLISHED) == 1
        await w.api.wait_for(lambda: _cards(w) == cards_before + 1)

        await w.desk.request("suspend", record.id, abel, via="slack", note="a leak was reported")
        told = await publish(w, "clean.tgz")
        assert "suspended: a leak was reported" in told and len(PUBLISHED) == 1
        return record.id


async def _delivered(w: World) -> None:
    """Until no approval owes a card edit or a report (at most 5 s)."""
    for _ in range(250):
        if all(not a.effects() for a in await w.assistant.approvals.listing()):
            return
        await asyncio.sleep(0.02)
    raise AssertionError("approvals still owe cards or reports after 5 s")


def _cards(w: World) -> int:
    return sum(1 for m in w.api.messages(APPROVERS) if "Approval needed" in m.text)


def _signature_card(w: World) -> Any:
    return next((m for m in w.tg.messages(TG_APPROVERS) if "standing:sign" in (m.text or "")), None)


def _user(user: TelegramUser) -> Any:
    from milpa_chat.chat import ChatUser

    return ChatUser(str(user.id), user.first_name, user.username)


def _slack_user(user_id: str) -> Any:
    from milpa_chat.chat import ChatUser

    return ChatUser(user_id, user_id, None, TEAM)


def _label(message: Any, word: str) -> str:
    return next(text for text in message.button_labels if word.lower() in text.lower())


async def test_every_step_is_a_tap_always_allow_on_slack_sign_on_telegram_grants_and_suspend_on_slack(
    tmp_path: Path,
) -> None:
    db = tmp_path / "taps.db"
    async with platforms() as (tg, api), world(db, tg, api) as w:
        rita = w.assistant.identities.context_for("telegram", _user(RITA), str(RITA.id))
        await w.assistant.registry.call("release_scan", {"archive": "clean.tgz", "strict": True}, rita)
        await w.assistant.registry.call("reports_watch", {}, rita)
        assert "approv" in (await publish(w, "clean.tgz")).lower()
        card = await w.api.wait_for_message(APPROVERS)
        tg_card = w.tg.last_message(TG_APPROVERS)
        assert "Always allow…" in [b["text"]["text"] for b in card.buttons()]  # the approver's copy offers it
        assert not any("Always" in label for label in w.tg.message(RITA.id, _last_id(w, RITA.id)).button_labels)

        await w.slack.click(card, _button(card, "Always allow")["action_id"], user=ABEL)  # drafts only
        await w.slack_bot.drain()
        await w.tg.wait_until(lambda: _signature_card(w) is not None, what="the signature's card")
        [draft] = await w.desk.listing()
        assert draft.state == "draft" and draft.uses == 0
        signature = _signature_card(w)
        await w.tg.tap_button(signature, _label(signature, "Approve"), SARA)  # the second, separate step
        await w.tg.wait_until(
            lambda: "Approved" in (w.tg.message(signature.chat.id, signature.message_id).text or ""),
            what="the signed card",
        )
        signed = await w.desk.get(draft.id)
        assert signed is not None and signed.state == "in_force" and signed.signer == "Sara"
        assert tg_card.button_labels  # the first request is still the approvers' to decide

        told = await publish(w, "clean.tgz")
        assert "published clean.tgz to stable" in told and PUBLISHED == [("clean.tgz", "stable")]

        await w.slack.command("/milpa", "grants", user=ABEL, channel=APPROVERS)
        await w.slack_bot.drain()
        listed = await w.api.wait_for(
            lambda: next((m for m in w.api.messages(APPROVERS) if f"Standing grant {draft.id}" in m.all_text()), None)
        )
        assert "1" in listed.all_text() and "in force" in listed.all_text()
        await w.slack.click(listed, _button(listed, "Suspend")["action_id"], user=ABEL)
        await w.slack_bot.drain()
        await w.api.wait_for(lambda: "suspended" in listed.all_text())  # the copy is edited
        assert (await w.desk.get(draft.id)).state == "suspended"  # type: ignore[union-attr]

        told = await publish(w, "clean.tgz")
        assert "suspended" in told and len(PUBLISHED) == 1


def _button(message: Any, label: str) -> dict[str, Any]:
    for element in message.buttons():
        if label.lower() in str(element.get("text", {}).get("text", "")).lower():
            return element
    raise LookupError(f"no button {label!r}: {[e.get('text', {}).get('text') for e in message.buttons()]}")


def _last_id(w: World, chat_id: int) -> int:
    return w.tg.messages(chat_id)[-1].message_id

"""Reply prompts of an edit survive a restart: kept in the assistant's store, so the bot that takes the reply
need not be the one that asked. Real python-telegram-bot on the local Bot API server, over one SQLite file:
two Assistant instances one after the other, and a bot process SIGKILLed between the prompt and the reply."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from milpa_chat import ToolRegistry, VerifyPolicy, tool
from milpa_chat.bots.telegram import TelegramBot
from milpa_chat.chat import Assistant, ChatUser, Identities
from milpa_chat.chat.editing import PROMPTS
from milpa_chat.chat.inbound import Inbound
from milpa_chat.store.sqlite import SqliteStore
from milpa_chat.testing import BotApiServer, ManualClock, TelegramMessage, TelegramUser

ROOT = Path(__file__).resolve().parents[2]
ALICE = TelegramUser(1001, "Alice", "alice")
MARIA = TelegramUser(2001, "Maria", "maria")
MATEO = TelegramUser(2002, "Mateo", "mateo")
GROUP = -500
IDENTITIES: dict[str, Any] = {
    "roles": {"writer": ["payments:send"], "manager": ["payments:approve"]},
    "users": {"telegram:1001": ["writer"], "telegram:2001": ["manager"], "telegram:2002": ["manager"]},
    "approvers": {"telegram": [str(GROUP)]},
}


class Payments:
    def __init__(self, store: SqliteStore) -> None:
        self.store = store

    @tool(
        "pay",
        "Send a payment",
        scopes=["payments:send"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("payments:approve",), expires_in=600),
    )
    async def pay(self, to: str, amount: float) -> dict[str, Any]:
        await self.store.append("paid", {"to": to, "amount": amount})
        return {"paid": amount, "to": to}


@asynccontextmanager
async def bot(tg: BotApiServer, db: Path, clock: ManualClock | None = None) -> AsyncIterator[Assistant]:
    """One bot: its own store connection and Assistant over the SQLite file, polling ``tg``."""
    store = SqliteStore(str(db), clock=clock) if clock is not None else SqliteStore(str(db))
    registry = ToolRegistry(store=store)
    registry.scan(Payments(store))
    assistant = Assistant(registry, Identities.from_dict(IDENTITIES), edits=True)
    telegram = TelegramBot(assistant, tg.token, tg.base_url, sweep_interval=None)
    await telegram.start(poll_timeout=1)
    try:
        yield assistant
    finally:
        await telegram.stop()
        await store.close()


def button(tg: BotApiServer, message: TelegramMessage, word: str) -> str:
    now = tg.message(message.chat.id, message.message_id)
    return next(text for text in now.button_labels if word.lower() in text.lower())


async def ask_amount(tg: BotApiServer, card: TelegramMessage, who: TelegramUser) -> TelegramMessage:
    """``who`` taps Edit, chooses amount: the ForceReply prompt they are sent."""
    tapped = await tg.tap_button(card, button(tg, card, "Edit"), who)
    chooser = await tg.wait_for_message(GROUP, since=tapped)
    chosen = await tg.tap_button(chooser, button(tg, chooser, "amount"), who)
    prompt = await tg.wait_for_message(GROUP, since=chosen)
    assert f"{who.first_name}: New value for amount" in (prompt.text or "")
    return prompt


def card_text(tg: BotApiServer, card: TelegramMessage) -> str:
    return tg.message(card.chat.id, card.message_id).text or ""


async def test_a_reply_to_a_prompt_asked_before_a_restart_edits_the_request(tmp_path: Path) -> None:
    db = tmp_path / "bot.db"
    async with BotApiServer() as tg:
        tg.group(GROUP, "Approvers", members=[MARIA, MATEO])
        async with bot(tg, db):
            asked = await tg.send_message(ALICE.id, ALICE, "/pay ACME 120")
            card = await tg.wait_for_message(GROUP, since=asked)
            prompt = await ask_amount(tg, card, MARIA)
        # the first bot is gone; what it asked is in the store, not in its memory
        async with bot(tg, db) as second:
            typed = Inbound("telegram", str(GROUP), ChatUser(str(MARIA.id), "Maria"), text="80", chat_type="group")
            assert not second.editor.waiting(typed)  # a message that replies to nothing: not known in memory,
            assert await second.editor.awaiting(typed)  # but the store has her prompt
            stray = await tg.send_message(GROUP, MATEO, "5", reply_to=prompt)  # not Maria: no answer of hers
            assert "I work with commands" in ((await tg.wait_for_message(GROUP, since=stray)).text or "")
            good = await tg.send_message(GROUP, MARIA, "80", reply_to=prompt)
            await tg.wait_for_message(GROUP, since=good)
            await tg.wait_until(lambda: "amount: 120.0 → 80.0" in card_text(tg, card))
            approval = (await second.approvals.listing())[0]
            assert approval.args["amount"] == 80.0 and approval.revision == 1
            assert await second.store.scan(PROMPTS) == []  # answered: no longer waiting

            again = await tg.send_message(GROUP, MARIA, "70", reply_to=prompt)  # the same prompt, answered twice
            told = await tg.wait_for_message(GROUP, since=again)
            assert "no longer open" in (told.text or "") and "nothing was changed" in (told.text or "")
            assert (await second.approvals.get(approval.id)).args["amount"] == 80.0  # type: ignore[union-attr]


async def test_a_prompt_of_an_older_revision_is_refused_after_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "bot.db"
    async with BotApiServer() as tg:
        tg.group(GROUP, "Approvers", members=[MARIA, MATEO])
        async with bot(tg, db):
            asked = await tg.send_message(ALICE.id, ALICE, "/pay ACME 120")
            card = await tg.wait_for_message(GROUP, since=asked)
            marias = await ask_amount(tg, card, MARIA)
            mateos = await ask_amount(tg, card, MATEO)
            sent = await tg.send_message(GROUP, MATEO, "90", reply_to=mateos)  # Mateo's edit: revision 1
            await tg.wait_for_message(GROUP, since=sent)
            await tg.wait_until(lambda: "amount: 120.0 → 90.0" in card_text(tg, card))
        async with bot(tg, db) as second:
            late = await tg.send_message(GROUP, MARIA, "10", reply_to=marias)  # asked at revision 0
            told = (await tg.wait_for_message(GROUP, since=late)).text or ""
            assert "The request changed since you were asked: Mateo edited amount" in told
            assert "Nothing was changed" in told
            approval = (await second.approvals.listing())[0]
            assert approval.args["amount"] == 90.0 and approval.revision == 1


async def test_a_prompt_stops_waiting_when_its_request_expires(tmp_path: Path) -> None:
    db, clock = tmp_path / "bot.db", ManualClock()
    async with BotApiServer() as tg:
        tg.group(GROUP, "Approvers", members=[MARIA, MATEO])
        async with bot(tg, db, clock) as first:
            asked = await tg.send_message(ALICE.id, ALICE, "/pay ACME 120")
            card = await tg.wait_for_message(GROUP, since=asked)
            prompt = await ask_amount(tg, card, MARIA)
            await tg.wait_until(lambda: bool(first.editor._prompts))
            held = await first.store.scan(PROMPTS)
            approval = (await first.approvals.listing())[0]
            assert [r.key for r in held] == [f"telegram:{GROUP}:{MARIA.id}"]
            assert held[0].expires_at == approval.expires_at  # it waits as long as the request does
        clock.advance(601)
        async with bot(tg, db, clock) as second:
            late = await tg.send_message(GROUP, MARIA, "80", reply_to=prompt)
            told = (await tg.wait_for_message(GROUP, since=late)).text or ""
            assert "no longer open" in told and "nothing was changed" in told
            assert (await second.approvals.get(approval.id)).args["amount"] == 120.0  # type: ignore[union-attr]


async def test_a_reply_to_an_earlier_prompt_is_refused_and_the_latest_still_waits(tmp_path: Path) -> None:
    async with BotApiServer() as tg:
        tg.group(GROUP, "Approvers", members=[MARIA, MATEO])
        async with bot(tg, tmp_path / "bot.db") as assistant:
            asked = await tg.send_message(ALICE.id, ALICE, "/pay ACME 120")
            card = await tg.wait_for_message(GROUP, since=asked)
            first = await ask_amount(tg, card, MARIA)
            tapped = await tg.tap_button(card, button(tg, card, "Edit"), MARIA)  # then asks for "to" instead
            chooser = await tg.wait_for_message(GROUP, since=tapped)
            chosen = await tg.tap_button(chooser, button(tg, chooser, "to"), MARIA)
            latest = await tg.wait_for_message(GROUP, since=chosen)
            assert "Maria: New value for to" in (latest.text or "")
            for _ in range(100):  # the store notes which message the prompt went out as, just after sending it
                held = await assistant.store.scan(PROMPTS)
                if held and held[0].value["message_id"] == str(latest.message_id):
                    break
                await asyncio.sleep(0.01)
            old = await tg.send_message(GROUP, MARIA, "80", reply_to=first)
            told = (await tg.wait_for_message(GROUP, since=old)).text or ""
            assert "You replied to an earlier question; nothing was changed" in told
            new = await tg.send_message(GROUP, MARIA, "Bob", reply_to=latest)
            await tg.wait_for_message(GROUP, since=new)
            await tg.wait_until(lambda: 'to: "ACME" → "Bob"' in card_text(tg, card))
            approval = (await assistant.approvals.listing())[0]
            assert approval.args == {"to": "Bob", "amount": 120.0}


# ------------------------------------------------------------------------------ a real process, SIGKILLed
BOT = textwrap.dedent("""
    import asyncio, os, sys
    sys.path.insert(0, os.environ["TESTS_ROOT"])
    from milpa_chat import ToolRegistry
    from milpa_chat.bots.telegram import TelegramBot
    from milpa_chat.chat import Assistant, ChatUser, Identities
    from milpa_chat.store.sqlite import SqliteStore
    from tests.chat.test_edit_prompts_durable import IDENTITIES, Payments

    async def main():
        store = SqliteStore(os.environ["DB"])
        registry = ToolRegistry(store=store)
        registry.scan(Payments(store))
        assistant = Assistant(registry, Identities.from_dict(IDENTITIES), edits=True)
        bot = TelegramBot(assistant, os.environ["TOKEN"], os.environ["BASE_URL"], sweep_interval=None)
        await bot.start(poll_timeout=1)
        await asyncio.Event().wait()

    asyncio.run(main())
""")


@asynccontextmanager
async def bot_process(tg: BotApiServer, db: Path, log: Path) -> AsyncIterator[Any]:
    env = {**os.environ, "DB": str(db), "TOKEN": tg.token, "BASE_URL": tg.base_url, "TESTS_ROOT": str(ROOT)}
    mark = tg.mark()
    with log.open("ab") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", BOT, cwd=ROOT, env=env, stdout=out, stderr=out
        )
    try:
        await tg.wait_for(lambda c: c.method == "getUpdates", since=mark, timeout=30)
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_a_bot_process_killed_between_prompt_and_reply_loses_nothing(tmp_path: Path) -> None:
    db, log = tmp_path / "bot.db", tmp_path / "bot.log"
    async with BotApiServer() as tg:
        tg.group(GROUP, "Approvers", members=[MARIA, MATEO])
        async with bot_process(tg, db, log) as first:
            asked = await tg.send_message(ALICE.id, ALICE, "/pay ACME 120")
            card = await tg.wait_for_message(GROUP, since=asked, timeout=20)
            prompt = await ask_amount(tg, card, MARIA)
            first.send_signal(signal.SIGKILL)
            assert await asyncio.wait_for(first.wait(), 20) == -signal.SIGKILL
        async with bot_process(tg, db, log):
            reply = await tg.send_message(GROUP, MARIA, "75", reply_to=prompt)
            answer = await tg.wait_for_message(GROUP, since=reply, timeout=20)
            assert "I work with commands" not in (answer.text or ""), log.read_text()
            await tg.wait_until(lambda: "amount: 120.0 → 75.0" in card_text(tg, card), timeout=20)
            await tg.tap_button(card, button(tg, card, "Approve"), MATEO)  # someone else approves the edit
            await tg.wait_until(lambda: "Done" in card_text(tg, card), timeout=20)
    store = SqliteStore(str(db))
    try:
        assert [e.value for e in await store.read("paid")] == [{"to": "ACME", "amount": 75.0}]
        assert await store.scan(PROMPTS) == []
    finally:
        await store.close()

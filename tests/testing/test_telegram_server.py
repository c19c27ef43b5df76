"""python-telegram-bot 22, unmodified, against milpa_chat.testing.BotApiServer over real HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import datetime as dtm
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import telegram  # the telegram and testing extras; a missing package must fail here, never skip
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, Update
from telegram.error import BadRequest, Conflict, InvalidToken, RetryAfter
from telegram.ext import (
    Application,
    CallbackQueryHandler,
    CommandHandler,
    ContextTypes,
    MessageHandler,
    filters,
)
from telegram.request import HTTPXRequest

from milpa_chat.testing import BotApiServer, TelegramChat, TelegramUser
from milpa_chat.testing.telegram.html import EntityParseError, parse_html
from milpa_chat.testing.telegram.markdown import parse_markdown, parse_markdown_v2

TOKEN = "123456:TEST-token"
PARSE = "Can't parse entities:"
ALICE = TelegramUser(42, "Alice", "alice")
BOB = TelegramUser(7, "Bob", "bob")
KEYBOARD = InlineKeyboardMarkup(
    [[InlineKeyboardButton("Approve", callback_data="approve:1"), InlineKeyboardButton("Deny", callback_data="deny:1")]]
)


@dataclass
class Seen:
    """What the bot's handlers observed."""

    args: list[list[str]] = field(default_factory=list)
    tappers: list[int] = field(default_factory=list)
    update_ids: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@pytest.fixture
async def server() -> AsyncIterator[BotApiServer]:
    async with BotApiServer(token=TOKEN) as started:
        yield started


@pytest.fixture
async def bot(server: BotApiServer) -> AsyncIterator[Bot]:
    async with Bot(
        TOKEN,
        base_url=server.base_url,
        base_file_url=server.base_file_url,
        request=HTTPXRequest(connection_pool_size=4),
        get_updates_request=HTTPXRequest(connection_pool_size=4),
    ) as client:
        yield client


def build_app(server: BotApiServer, seen: Seen, *, webhook: bool = False) -> Application[Any, Any, Any, Any, Any, Any]:
    builder = Application.builder().token(TOKEN).base_url(server.base_url).base_file_url(server.base_file_url)
    app = builder.build()

    async def start(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.effective_message is not None
        seen.args.append(list(context.args or []))
        seen.update_ids.append(update.update_id)
        await update.effective_message.reply_text("Approve <b>rm -rf</b>?", parse_mode="HTML", reply_markup=KEYBOARD)

    async def echo(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.effective_message is not None and update.effective_message.text is not None
        seen.update_ids.append(update.update_id)
        await update.effective_message.reply_text(f"You said: {update.effective_message.text}")

    async def on_button(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        query = update.callback_query
        assert query is not None and query.data is not None
        seen.tappers.append(query.from_user.id)
        await query.answer("Recorded")
        text = f"Decision: {query.data.split(':')[0]} by {query.from_user.first_name}"
        for _ in range(2):  # the second, identical edit is what Telegram refuses
            try:
                await query.edit_message_text(text)
            except BadRequest as exc:
                seen.errors.append(exc.message)

    app.add_handler(CommandHandler("start", start))
    app.add_handler(MessageHandler(filters.TEXT & ~filters.COMMAND, echo))
    app.add_handler(CallbackQueryHandler(on_button))
    return app


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# -- polling ------------------------------------------------------------------------------------------


async def test_polling_command_button_tap_and_edit(server: BotApiServer) -> None:
    seen = Seen()
    app = build_app(server, seen)
    group = server.group(-1001, "Ops", members=[ALICE, BOB])
    async with app:
        await app.start()
        assert app.updater is not None
        await app.updater.start_polling(poll_interval=0.0, timeout=dtm.timedelta(seconds=1))

        await server.send_message(group.id, ALICE, "/start@milpa_test_bot now please")
        card = await server.wait_for_message(group.id)
        assert card.text == "Approve rm -rf?"
        assert card.entities == [{"type": "bold", "offset": 8, "length": 6}]
        assert card.current.source == "Approve <b>rm -rf</b>?"
        assert card.button_labels == ["Approve", "Deny"]
        assert seen.args == [["now", "please"]]

        before_tap = time.monotonic()
        tap = await server.tap_button(card, "Approve", BOB)
        await server.wait_for(lambda c: c.method == "editMessageText", since=tap)
        await server.wait_until(lambda: len(seen.errors) == 1)
        await app.updater.stop()
        await app.stop()

    after_answer = time.monotonic()
    assert seen.tappers == [BOB.id]  # the platform's from.id, set by the server
    query = server.callback_query(tap)
    assert query.answered and query.answer_text == "Recorded" and query.user == BOB
    # measured from the tap to the bot's answer: inside the window the test saw around them
    assert query.answer_latency is not None and 0 <= query.answer_latency <= after_answer - before_tap
    print(f"\nthe tap was answered {query.answer_latency * 1000:.0f} ms after it")
    edited = server.message(group.id, card.message_id)
    assert edited.text == "Decision: approve by Bob"
    assert edited.reply_markup is None  # editMessageText without reply_markup removes the keyboard
    assert [v.text for v in edited.versions] == ["Approve rm -rf?", "Decision: approve by Bob"]
    assert seen.errors == [
        "Message is not modified: specified new message content and reply markup are exactly the same as a "
        "current content and reply markup of the message"
    ]
    methods = [c.method for c in server.calls]
    assert methods[:3] == ["getMe", "deleteWebhook", "getUpdates"]
    last = server.calls[-1]
    assert last.method == "getUpdates" and last.params["timeout"] == "0"  # PTB confirms on stop
    assert not server.feed.pending


async def test_plain_message_with_utf16_offsets_and_redelivery(server: BotApiServer) -> None:
    seen = Seen()
    app = build_app(server, seen)
    async with app:
        await app.start()
        assert app.updater is not None
        await app.updater.start_polling(poll_interval=0.0, timeout=dtm.timedelta(seconds=1))
        first = await server.send_message(ALICE.id, ALICE, "👍 hello")
        reply = await server.wait_for_message(ALICE.id)
        assert reply.text == "You said: 👍 hello"
        command = await server.send_message(ALICE.id, ALICE, "👍 /start")
        assert command.payload["message"]["entities"] == [{"type": "bot_command", "offset": 3, "length": 6}]
        again = await server.redeliver(first)
        await server.wait_for_message(ALICE.id, since=again)
        await server.wait_until(lambda: not server.feed.pending)
        await app.updater.stop()
        await app.stop()
    assert again.update_id == first.update_id
    assert seen.update_ids == [first.update_id, command.update_id, first.update_id]  # "/start" not at offset 0
    assert [m.text for m in server.messages(ALICE.id, include_user_messages=True)][:2] == ["👍 hello", reply.text]


async def test_long_polling_honours_timeout_offset_and_conflicts(server: BotApiServer, bot: Bot) -> None:
    started = asyncio.get_running_loop().time()
    assert await bot.get_updates(timeout=1) == ()
    assert asyncio.get_running_loop().time() - started >= 0.9

    waiting = asyncio.create_task(bot.get_updates(timeout=5))
    await server.wait_until(lambda: any(c.method == "getUpdates" and not c.status for c in server.calls))
    update = await server.send_message(ALICE.id, ALICE, "hi")
    received = await waiting
    assert [u.update_id for u in received] == [update.update_id]
    assert [u.update_id for u in await bot.get_updates(offset=update.update_id)] == [update.update_id]
    assert await bot.get_updates(offset=update.update_id + 1) == ()  # confirmed
    assert not server.feed.pending

    first = asyncio.create_task(bot.get_updates(timeout=5))
    await server.wait_until(lambda: any(c.method == "getUpdates" and not c.status for c in server.calls))
    second = asyncio.create_task(bot.get_updates(timeout=0))
    with pytest.raises(Conflict, match="terminated by other getUpdates request"):
        await first
    assert await second == ()


async def test_polling_bot_gets_conflict_when_a_webhook_is_set(server: BotApiServer, bot: Bot) -> None:
    errors: list[Exception] = []
    app = build_app(server, Seen())
    async with app:
        await app.start()
        assert app.updater is not None
        await app.updater.start_polling(poll_interval=0.0, timeout=dtm.timedelta(seconds=1),
                                        error_callback=errors.append)  # fmt: skip
        await server.wait_until(lambda: any(c.method == "getUpdates" and not c.status for c in server.calls))
        await bot.set_webhook("http://127.0.0.1:9/hook")  # e.g. a second deployment of the same bot
        await server.wait_until(lambda: bool(errors))
        await app.updater.stop()
        await app.stop()
    assert isinstance(errors[0], Conflict)
    assert errors[0].message == "Conflict: terminated by setWebhook request"


async def test_fifty_concurrent_taps_are_all_answered(server: BotApiServer, bot: Bot) -> None:
    seen = Seen()
    app = build_app(server, seen)
    server.private_chat(ALICE)
    card = await bot.send_message(ALICE.id, "Pick", reply_markup=KEYBOARD)
    message = server.message(ALICE.id, card.message_id)
    users = [TelegramUser(1000 + n, f"User {n}") for n in range(50)]
    async with app:
        await app.start()
        assert app.updater is not None
        await app.updater.start_polling(poll_interval=0.0, timeout=dtm.timedelta(seconds=1))
        taps = await asyncio.gather(*(server.tap_button(message, "Approve", user) for user in users))
        await server.wait_until(lambda: all(server.callback_query(tap).answered for tap in taps), timeout=10)
        await app.updater.stop()
        await app.stop()
    assert sorted(seen.tappers) == [user.id for user in users]
    assert len({tap.update_id for tap in taps}) == 50


async def test_webhook_excludes_polling_and_drop_pending(server: BotApiServer, bot: Bot) -> None:
    await server.send_message(ALICE.id, ALICE, "queued")
    assert await bot.set_webhook("http://127.0.0.1:9/hook", secret_token="s3cret_-")
    with pytest.raises(Conflict, match="can't use getUpdates method while webhook is active"):
        await bot.get_updates()
    info = await bot.get_webhook_info()
    assert info.url == "http://127.0.0.1:9/hook" and info.pending_update_count == 1
    with pytest.raises(BadRequest, match="Secret token contains unallowed characters"):
        await bot.set_webhook("http://127.0.0.1:9/hook", secret_token="no spaces")
    assert await bot.delete_webhook(drop_pending_updates=True)
    assert (await bot.get_webhook_info()).pending_update_count == 0
    assert await bot.get_updates() == ()


# -- webhook mode -------------------------------------------------------------------------------------


async def test_webhook_mode_with_secret_token(server: BotApiServer) -> None:
    import tornado  # noqa: F401  # python-telegram-bot[webhooks]: PTB's webhook server

    seen = Seen()
    app = build_app(server, seen)
    port = free_port()
    async with app:
        await app.start()
        assert app.updater is not None
        await app.updater.start_webhook(
            listen="127.0.0.1", port=port, url_path="hook", webhook_url=f"http://127.0.0.1:{port}/hook",
            secret_token="right-token",
        )  # fmt: skip
        assert server.webhook is not None and server.webhook.secret_token == "right-token"

        update = await server.send_message(ALICE.id, ALICE, "/start")
        card = await server.wait_for_message(ALICE.id)
        assert [d.status for d in update.deliveries] == [200]
        assert update.deliveries[0].secret_token == "right-token"

        forged = await server.tap_button(card, "Approve", BOB)  # delivered with the right token first
        await server.wait_until(lambda: server.callback_query(forged).answered)
        wrong = await server.post_to_webhook(forged, secret_token="wrong-token")
        missing = await server.post_to_webhook(forged, secret_token=None)
        await app.updater.stop()
        await app.stop()

    assert (wrong.status, missing.status) == (403, 403)  # PTB refuses deliveries without the right token
    assert seen.tappers == [BOB.id]  # only the genuine delivery reached the handler
    # Telegram reports the status line; PTB's reason phrase is "Request did not include the secret token"
    assert (server.feed.last_error_message or "").startswith("Wrong response from the webhook: 403 ")
    set_webhook = next(c for c in server.calls if c.method == "setWebhook")
    assert set_webhook.params["secret_token"] == "right-token"


# -- validation: errors PTB raises ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"text": "a <foo>b</foo>", "parse_mode": "HTML"}, f'{PARSE} unsupported start tag "foo" at byte offset 2'),
        ({"text": "<b>open", "parse_mode": "HTML"}, f'{PARSE} can\'t find end tag corresponding to start tag "b"'),
        (
            {"text": "<b>x</i>", "parse_mode": "HTML"},
            f'{PARSE} unmatched end tag at byte offset 4, expected "</b>", found "</i>"',
        ),
        ({"text": "x" * 4097}, "Message is too long"),
        ({"text": "<b>" + "x" * 4096 + "</b>", "parse_mode": "HTML"}, None),  # 4096 after parsing is fine
        ({"text": "  \n "}, "Text must be non-empty"),
        ({"text": "ok", "parse_mode": "Klingon"}, "Unsupported parse_mode"),
        (
            {"text": "rm -rf", "parse_mode": "MarkdownV2"},
            f"{PARSE} character '-' is reserved and must be escaped with the preceding '\\'",
        ),
        ({"text": "*bold", "parse_mode": "MarkdownV2"}, f"{PARSE} can't find end of bold entity at byte offset 0"),
        ({"text": "rm \\-rf *x*", "parse_mode": "MarkdownV2"}, None),
        (
            {"text": "snake_case", "parse_mode": "Markdown"},
            f"{PARSE} can't find end of the entity starting at byte offset 5",
        ),
        (
            {"text": "ok", "reply_markup": InlineKeyboardMarkup([[InlineKeyboardButton("x", callback_data="d" * 65)]])},
            "Button_data_invalid",
        ),
        (
            {"text": "ok", "reply_markup": InlineKeyboardMarkup([[InlineKeyboardButton("x", callback_data="é" * 32)]])},
            None,  # 64 bytes exactly
        ),
        (
            {
                "text": "ok",
                "reply_markup": InlineKeyboardMarkup(
                    [[InlineKeyboardButton(str(i), callback_data=str(i)) for i in range(9)]]
                ),
            },
            "Reply markup is too long",
        ),
    ],
)
async def test_send_message_validation(
    server: BotApiServer, bot: Bot, kwargs: dict[str, Any], message: str | None
) -> None:
    server.private_chat(ALICE)
    if message is None:
        await bot.send_message(ALICE.id, **kwargs)
        return
    with pytest.raises(BadRequest) as caught:
        await bot.send_message(ALICE.id, **kwargs)
    assert caught.value.message == message
    failed = server.calls[-1]
    assert failed.status == 400 and failed.error is not None and failed.error.startswith("Bad Request: ")
    assert server.messages(ALICE.id) == []


async def test_send_to_unknown_chat_and_empty_text(server: BotApiServer, bot: Bot) -> None:
    with pytest.raises(BadRequest, match=r"^Chat not found$"):
        await bot.send_message(999, "hello")
    server.private_chat(ALICE)
    with pytest.raises(BadRequest, match=r"^Message text is empty$"):
        await bot.send_message(ALICE.id, "")


async def test_edits_deletes_and_callback_answers(server: BotApiServer, bot: Bot) -> None:
    server.private_chat(ALICE)
    sent = await bot.send_message(ALICE.id, "Pick", reply_markup=KEYBOARD)
    tap = await server.tap(ALICE.id, sent.message_id, ALICE, "forged:data")  # any data, as a modified client
    assert tap.payload["callback_query"]["from"]["id"] == ALICE.id
    query_id = tap.payload["callback_query"]["id"]
    assert await bot.answer_callback_query(query_id, "ok")
    with pytest.raises(BadRequest, match="Query is too old and response timeout expired or query id is invalid"):
        await bot.answer_callback_query(query_id, "again")
    with pytest.raises(BadRequest, match="Query is too old"):
        await bot.answer_callback_query("12345")

    with pytest.raises(BadRequest, match=r"^Message is not modified"):
        await bot.edit_message_reply_markup(ALICE.id, sent.message_id, reply_markup=KEYBOARD)
    edited = await bot.edit_message_reply_markup(ALICE.id, sent.message_id)  # removes the keyboard
    assert isinstance(edited, telegram.Message) and edited.reply_markup is None
    with pytest.raises(BadRequest, match=r"^Message to edit not found$"):
        await bot.edit_message_text("x", ALICE.id, 999)
    user_message = await server.send_message(ALICE.id, ALICE, "mine")
    with pytest.raises(BadRequest, match=r"^Message can't be edited$"):
        await bot.edit_message_text("x", ALICE.id, user_message.payload["message"]["message_id"])
    assert await bot.delete_message(ALICE.id, sent.message_id)
    with pytest.raises(BadRequest, match=r"^Message to delete not found$"):
        await bot.delete_message(ALICE.id, sent.message_id)
    assert server.message(ALICE.id, sent.message_id).deleted


async def test_late_answer_is_refused() -> None:
    async with BotApiServer(token=TOKEN, callback_query_timeout=0.1) as server:
        server.private_chat(ALICE)
        async with Bot(TOKEN, base_url=server.base_url) as bot:
            sent = await bot.send_message(ALICE.id, "Pick", reply_markup=KEYBOARD)
            tap = await server.tap(ALICE.id, sent.message_id, ALICE, "approve:1")
            await asyncio.sleep(0.2)
            with pytest.raises(BadRequest, match="Query is too old"):
                await bot.answer_callback_query(tap.payload["callback_query"]["id"])
        assert not server.callback_query(tap).answered


@pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")  # PTB reading RetryAfter.retry_after
async def test_flood_control_wrong_token_and_armed_errors(server: BotApiServer, bot: Bot) -> None:
    server.private_chat(ALICE)
    server.arm_flood_control(retry_after=3)
    with pytest.raises(RetryAfter) as caught:
        await bot.send_message(ALICE.id, "hi")
    assert str(caught.value) == "Flood control exceeded. Retry in 3 seconds"
    assert server.calls[-1].status == 429
    assert (await bot.send_message(ALICE.id, "hi")).text == "hi"  # armed once only
    server.arm_error("sendMessage", 403, "Forbidden: bot was blocked by the user")
    with pytest.raises(telegram.error.Forbidden, match="bot was blocked by the user"):
        await bot.send_message(ALICE.id, "hi")
    with pytest.raises(InvalidToken, match="was rejected by the server"):
        async with Bot("123456:WRONG-token", base_url=server.base_url):
            pass
    assert (server.calls[-1].method, server.calls[-1].status, server.calls[-1].error) == ("getMe", 401, "Unauthorized")


# -- documents, chat actions, chats, commands --------------------------------------------------------


async def test_document_chat_action_chat_info_and_commands(server: BotApiServer, bot: Bot) -> None:
    group = server.group(-100200, "Ops", members=[ALICE], admins=[BOB], supergroup=True)
    message = await bot.send_document(group.id, b"a,b\n1,2\n", filename="report.csv", caption="<i>Report</i>",
                                      parse_mode="HTML")  # fmt: skip
    assert message.document is not None and message.document.file_name == "report.csv"
    assert message.caption == "Report"
    upload = next(c for c in server.calls if c.method == "sendDocument")
    assert upload.files["document"] == ("report.csv", b"a,b\n1,2\n")
    file = await bot.get_file(message.document.file_id)
    assert bytes(await file.download_as_bytearray()) == b"a,b\n1,2\n"  # through base_file_url

    assert await bot.send_chat_action(group.id, "typing")
    assert [a.action for a in server.chat_actions(group.id)] == ["typing"]
    with pytest.raises(BadRequest, match="Wrong parameter action in request"):
        await bot.send_chat_action(group.id, "dancing")

    chat = await bot.get_chat(group.id)
    assert (chat.type, chat.title) == ("supergroup", "Ops")
    assert (await bot.get_chat_member(group.id, BOB.id)).status == "administrator"
    assert (await bot.get_chat_member(group.id, ALICE.id)).status == "member"

    await bot.set_my_commands([("start", "Start"), ("tools", "List tools")])
    assert [c.command for c in await bot.get_my_commands()] == ["start", "tools"]
    assert server.commands()[1] == {"command": "tools", "description": "List tools"}
    with pytest.raises(BadRequest, match="Bot_command_invalid"):
        await bot.set_my_commands([("Bad-Command", "x")])


# -- the HTML parser on its own ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "text", "entities"),
    [
        ("a &lt;b&gt; &amp; &quot;c&quot; &#128077; &#x41; &nbsp;", 'a <b> & "c" 👍 A &nbsp;', []),
        ("<b>x <i>y</i></b>", "x y", [{"type": "bold", "offset": 0, "length": 3},
                                      {"type": "italic", "offset": 2, "length": 1}]),
        ('<pre><code class="language-python">x = 1</code></pre>', "x = 1",
         [{"type": "pre", "offset": 0, "length": 5, "language": "python"}]),
        ('<a href="https://example.org/?a=1&amp;b=2">link</a>', "link",
         [{"type": "text_link", "offset": 0, "length": 4, "url": "https://example.org/?a=1&b=2"}]),
        ('<span class="tg-spoiler">s</span><tg-spoiler>t</tg-spoiler>', "st",
         [{"type": "spoiler", "offset": 0, "length": 1}, {"type": "spoiler", "offset": 1, "length": 1}]),
        ("<blockquote expandable>q</blockquote>", "q", [{"type": "expandable_blockquote", "offset": 0, "length": 1}]),
        ("👍<u>x</u>", "👍x", [{"type": "underline", "offset": 2, "length": 1}]),
        ("<b>x</>", "x", [{"type": "bold", "offset": 0, "length": 1}]),
    ],
)  # fmt: skip
def test_parse_html_accepts(source: str, text: str, entities: list[dict[str, Any]]) -> None:
    assert parse_html(source) == (text, entities)


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("1 < 2", 'Unsupported start tag "" at byte offset 2'),
        ("<br>", 'Unsupported start tag "br" at byte offset 0'),
        ("</b>", "Unexpected end tag at byte offset 0"),
        ("<b", "Unclosed start tag at byte offset 0"),
        ('<a href="x">', 'Can\'t find end tag corresponding to start tag "a"'),
        ("<span>x</span>", 'Tag "span" must have class "tg-spoiler" at byte offset 0'),
        ("é<b>x</b =", "Unclosed end tag at byte offset 6"),
        ('<tg-emoji emoji-id="abc">x</tg-emoji>', "Invalid custom emoji identifier specified"),
    ],
)
def test_parse_html_rejects(source: str, error: str) -> None:
    with pytest.raises(EntityParseError) as caught:
        parse_html(source)
    assert str(caught.value) == error


@pytest.mark.parametrize(
    ("source", "text", "entities"),
    [
        ("*b* _i_ __u__ ~s~ ||p|| `c`", "b i u s p c", [
            {"type": "bold", "offset": 0, "length": 1}, {"type": "italic", "offset": 2, "length": 1},
            {"type": "underline", "offset": 4, "length": 1}, {"type": "strikethrough", "offset": 6, "length": 1},
            {"type": "spoiler", "offset": 8, "length": 1}, {"type": "code", "offset": 10, "length": 1}]),
        ("rm \\-rf /tmp/\\*\\.log", "rm -rf /tmp/*.log", []),
        ("[a](http://x/\\)y) 👍 *b*", "a 👍 b", [
            {"type": "text_link", "url": "http://x/)y", "offset": 0, "length": 1},
            {"type": "bold", "offset": 5, "length": 1}]),
        ("```python\nx = 1```", "x = 1", [{"type": "pre", "language": "python", "offset": 0, "length": 5}]),
        (">q\n>r\nafter", "q\nr\nafter", [{"type": "blockquote", "offset": 0, "length": 4}]),
        ("![👍](tg://emoji?id=5368324170671202286)", "👍",
         [{"type": "custom_emoji", "custom_emoji_id": "5368324170671202286", "offset": 0, "length": 2}]),
    ],
)  # fmt: skip
def test_parse_markdown_v2_accepts(source: str, text: str, entities: list[dict[str, Any]]) -> None:
    assert parse_markdown_v2(source) == (text, entities)


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("1.5", "Character '.' is reserved and must be escaped with the preceding '\\'"),
        ("a *b _c* d_", "Can't find end of Italic entity at byte offset 10"),
        ("[x](http://a", "Can't find end of a URL at byte offset 4"),
        ("![x](http://a)", "Invalid tg://emoji or tg://time URL specified"),
    ],
)
def test_parse_markdown_v2_rejects(source: str, error: str) -> None:
    with pytest.raises(EntityParseError) as caught:
        parse_markdown_v2(source)
    assert str(caught.value) == error


def test_parse_legacy_markdown() -> None:
    assert parse_markdown("*b* _i_ `c` [t](http://x.org) a\\_b") == ("b i c t a_b", [
        {"type": "bold", "offset": 0, "length": 1}, {"type": "italic", "offset": 2, "length": 1},
        {"type": "code", "offset": 4, "length": 1},
        {"type": "text_link", "url": "http://x.org", "offset": 6, "length": 1},
    ])  # fmt: skip
    with pytest.raises(EntityParseError, match="Can't find end of the entity starting at byte offset 1"):
        parse_markdown("x_y")


def test_chat_factories() -> None:
    assert TelegramChat.private(ALICE).to_dict() == {
        "id": 42,
        "type": "private",
        "username": "alice",
        "first_name": "Alice",
    }
    with pytest.raises(ValueError, match="negative"):
        TelegramChat.group(5, "Ops")


async def test_a_webhook_that_resets_the_connection_is_a_failed_delivery_kept_for_later(
    server: BotApiServer, bot: Bot
) -> None:
    """A balancer or worker that drops the connection mid-request (a reset, not an HTTP error) is a failed
    delivery, as Telegram counts it: the error is in getWebhookInfo and the update stays pending."""
    import socket
    import struct

    async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(65536)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")  # then gone mid-body
        await writer.drain()
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with RST
        writer.transport.abort()

    listener = await asyncio.start_server(reset, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        assert await bot.set_webhook(f"http://127.0.0.1:{port}/hook")
        update = await server.send_message(ALICE.id, ALICE, "hello")
        await server.deliver_pending()
        assert update.deliveries and update.deliveries[-1].status is None
        assert (update.deliveries[-1].error or "").startswith("Connection error")
        info = await bot.get_webhook_info()
        assert info.pending_update_count == 1 and (info.last_error_message or "").startswith("Connection error")
    finally:
        listener.close()
        await listener.wait_closed()

"""The Bot API methods that act on chats and messages, over the server's in-memory state.

Each public method here takes the request's :class:`Params` and returns the ``result`` Telegram
would return, or raises :class:`ApiError` with Telegram's status and text. Updates, long polling
and webhooks live in ``telegram_updates``; HTTP in ``telegram``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import time
from collections.abc import Callable, Iterable
from typing import Any

from milpa_chat.testing.telegram.models import (
    TelegramCallbackQuery,
    TelegramChat,
    TelegramChatAction,
    TelegramDraft,
    TelegramFile,
    TelegramMessage,
    TelegramMessageVersion,
    TelegramUser,
)
from milpa_chat.testing.telegram.validate import (
    ApiError,
    FormattedText,
    Params,
    parse_commands,
    parse_draft_text,
    parse_formatted_text,
    parse_reply_markup,
)

__all__ = ["CHAT_ACTIONS", "BotState"]

CHAT_ACTIONS = frozenset(
    {
        "cancel", "typing", "record_video", "upload_video", "record_audio", "record_voice", "upload_audio",
        "upload_voice", "upload_photo", "upload_document", "choose_sticker", "pick_up_location",
        "find_location", "record_video_note", "upload_video_note",
    }
)  # fmt: skip
_QUERY_TOO_OLD = "query is too old and response timeout expired or query ID is invalid"
_NOT_MODIFIED = (
    "message is not modified: specified new message content and reply markup are exactly the same as a "
    "current content and reply markup of the message"
)
_ADMIN_RIGHTS = (
    "can_be_edited", "is_anonymous", "can_manage_chat", "can_delete_messages", "can_manage_video_chats",
    "can_restrict_members", "can_promote_members", "can_change_info", "can_invite_users", "can_post_stories",
    "can_edit_stories", "can_delete_stories",
)  # fmt: skip


class BotState:
    """Chats, messages, files, button taps and commands of one bot."""

    def __init__(self, bot: TelegramUser, *, callback_query_timeout: float) -> None:
        self.bot = bot
        self.callback_query_timeout = callback_query_timeout
        self.chats: dict[int, TelegramChat] = {}
        self.members: dict[int, dict[int, str]] = {}  # chat id -> user id -> status
        self.users: dict[int, TelegramUser] = {bot.id: bot}
        self.messages: dict[tuple[int, int], TelegramMessage] = {}
        self.callback_queries: dict[str, TelegramCallbackQuery] = {}
        self.chat_actions: list[TelegramChatAction] = []
        self.drafts: list[TelegramDraft] = []
        self.files: dict[str, TelegramFile] = {}
        self.commands: dict[tuple[str, str], list[dict[str, str]]] = {}
        self._message_ids: dict[int, itertools.count[int]] = {}
        self._file_ids = itertools.count(1)

    # -- chats and messages -------------------------------------------------------------------

    def add_chat(
        self, chat: TelegramChat, members: Iterable[TelegramUser] = (), admins: Iterable[TelegramUser] = ()
    ) -> TelegramChat:
        known = self.chats.setdefault(chat.id, chat)
        roles = self.members.setdefault(chat.id, {self.bot.id: "administrator" if chat.type != "private" else "member"})
        for user, status in [*((u, "member") for u in members), *((u, "administrator") for u in admins)]:
            self.users[user.id] = user
            roles[user.id] = status
        return known

    def chat(self, chat_id: int) -> TelegramChat:
        try:
            return self.chats[chat_id]
        except KeyError:
            raise ApiError.bad_request("chat not found") from None

    def add_message(
        self,
        chat: TelegramChat,
        sender: TelegramUser,
        version: TelegramMessageVersion,
        *,
        document: TelegramFile | None = None,
        reply_to: int | None = None,
    ) -> TelegramMessage:
        counter = self._message_ids.setdefault(chat.id, itertools.count(1))
        message = TelegramMessage(chat, next(counter), sender, int(time.time()), [version], document, reply_to)
        self.messages[(chat.id, message.message_id)] = message
        return message

    def message(self, chat_id: int, message_id: int, what: str) -> TelegramMessage:
        message = self.messages.get((chat_id, message_id))
        if message is None or message.deleted:
            raise ApiError.bad_request(f"{what} not found")
        return message

    def chat_messages(self, chat_id: int) -> list[TelegramMessage]:
        return [m for (cid, _), m in sorted(self.messages.items()) if cid == chat_id and not m.deleted]

    # -- sending ----------------------------------------------------------------------------------

    def send_message(self, params: Params) -> dict[str, Any]:
        text = parse_formatted_text(params)
        assert text is not None
        markup = parse_reply_markup(params)
        chat = self.chat(params.chat_id())
        message = self.add_message(chat, self.bot, _version(text, markup, params), reply_to=self._reply_to(params))
        return message.to_dict()

    def send_message_draft(self, params: Params) -> bool:
        """Bot API 9.3/10.0: a partial message shown while it is produced, in private chats only."""
        chat = self.chat(params.chat_id())
        if chat.type != "private":
            raise ApiError.bad_request("message drafts can be sent only to private chats")
        raw = params.text("draft_id").strip()
        if not raw:
            raise ApiError.bad_request("draft_id is empty")
        try:
            draft_id = int(raw)
        except ValueError:
            raise ApiError.bad_request("draft_id must be an Integer") from None
        if draft_id == 0:
            raise ApiError.bad_request("draft_id must be non-zero")
        text = parse_draft_text(params)
        self.drafts.append(TelegramDraft(chat.id, draft_id, text.text, text.entities, time.monotonic()))
        return True

    def send_document(self, params: Params) -> dict[str, Any]:
        caption = parse_formatted_text(params, caption=True)
        markup = parse_reply_markup(params)
        chat = self.chat(params.chat_id())
        file = self._document(params)
        version = _version(caption, markup, params)
        return self.add_message(chat, self.bot, version, document=file, reply_to=self._reply_to(params)).to_dict()

    def _reply_to(self, params: Params) -> int | None:
        reply = params.json_value("reply_parameters", "reply parameters")
        if isinstance(reply, dict) and isinstance(reply.get("message_id"), int):
            return int(reply["message_id"])
        return params.integer("reply_to_message_id") or None

    def _document(self, params: Params) -> TelegramFile:
        part = params.files.get("document")
        reference = params.text("document")
        if part is None and reference.startswith("attach://"):
            part = params.files.get(reference.removeprefix("attach://"))
        if part is not None:
            filename, content_type, content = part
            number = next(self._file_ids)
            file_id = "BQACAgIAAxk" + hashlib.sha256(f"{self.bot.id}:{number}".encode()).hexdigest()[:40]
            uploaded = TelegramFile(file_id, f"AgAD{number:08d}", filename, content_type, content,
                                    f"documents/file_{number}{_suffix(filename)}")  # fmt: skip
            self.files[file_id] = uploaded
            return uploaded
        if not reference:
            raise ApiError.bad_request("there is no document in the request")
        if reference in self.files:
            return self.files[reference]
        if reference.startswith(("http://", "https://")):
            raise ApiError.bad_request("failed to get HTTP URL content")  # this server fetches nothing
        raise ApiError.bad_request("wrong file identifier/HTTP URL specified")

    # -- editing ----------------------------------------------------------------------------------

    def _editable(self, params: Params) -> TelegramMessage:
        if not params.text("chat_id") and not params.integer("message_id"):
            if params.text("inline_message_id"):
                raise ApiError.bad_request("MESSAGE_ID_INVALID")  # no inline messages exist here
            raise ApiError.bad_request("Message identifier is not specified")
        chat = self.chat(params.chat_id())
        message = self.message(chat.id, params.integer("message_id"), "message to edit")
        if message.sender.id != self.bot.id:
            raise ApiError.bad_request("message can't be edited")
        return message

    def edit_message_text(self, params: Params) -> dict[str, Any]:
        text = parse_formatted_text(params, edit=True)
        assert text is not None
        markup = parse_reply_markup(params)
        message = self._editable(params)
        if message.document is not None:
            raise ApiError.bad_request("there is no text in the message to edit")
        return self._apply_edit(message, _version(text, markup, params))

    def edit_message_reply_markup(self, params: Params) -> dict[str, Any]:
        markup = parse_reply_markup(params)
        message = self._editable(params)
        current = message.current
        version = TelegramMessageVersion(current.text, current.entities, markup, current.source, current.parse_mode,
                                 time.monotonic())  # fmt: skip
        return self._apply_edit(message, version)

    def _apply_edit(self, message: TelegramMessage, version: TelegramMessageVersion) -> dict[str, Any]:
        if version.content_key() == message.current.content_key():
            raise ApiError.bad_request(_NOT_MODIFIED)
        message.versions.append(version)
        message.edit_date = int(time.time())
        return message.to_dict()

    def delete_message(self, params: Params) -> bool:
        if not params.text("chat_id"):
            raise ApiError.bad_request("Chat identifier is not specified")
        if not params.integer("message_id"):
            raise ApiError.bad_request("Message identifier is not specified")
        chat = self.chat(params.chat_id())
        message = self.message(chat.id, params.integer("message_id"), "message to delete")
        if message.sender.id != self.bot.id and chat.type != "private" and not self._is_admin(chat.id):
            raise ApiError.bad_request("message can't be deleted")
        message.deleted = True
        return True

    def _is_admin(self, chat_id: int) -> bool:
        return self.members.get(chat_id, {}).get(self.bot.id) in ("administrator", "creator")

    # -- button taps, chat actions ---------------------------------------------------------------

    def answer_callback_query(self, params: Params) -> bool:
        query = self.callback_queries.get(params.text("callback_query_id"))
        now = time.monotonic()
        if query is not None:
            query.answer_attempts += 1
        if query is None or query.answered or now - query.created_at > self.callback_query_timeout:
            raise ApiError.bad_request(_QUERY_TOO_OLD)
        text = params.text("text")
        if len(text) > 200:
            raise ApiError.bad_request("MESSAGE_TOO_LONG")
        query.answered_at = now
        query.answer_text = text or None
        query.show_alert = params.flag("show_alert")
        query.url = params.text("url") or None
        return True

    def send_chat_action(self, params: Params) -> bool:
        chat = self.chat(params.chat_id())
        action = params.text("action").lower()
        if action not in CHAT_ACTIONS:
            raise ApiError.bad_request("Wrong parameter action in request")
        self.chat_actions.append(TelegramChatAction(chat.id, action, time.monotonic()))
        return True

    # -- chats, members, commands, files ---------------------------------------------------------

    def get_chat(self, params: Params) -> dict[str, Any]:
        chat = self.chat(params.chat_id())
        gifts = ("unlimited_gifts", "limited_gifts", "unique_gifts", "premium_subscription", "gifts_from_channels")
        return {
            **chat.to_dict(),
            "accent_color_id": 0,
            "max_reaction_count": 11,
            "accepted_gift_types": dict.fromkeys(gifts, False),
        }

    def get_chat_member(self, params: Params) -> dict[str, Any]:
        chat = self.chat(params.chat_id())
        user = self.users.get(params.integer("user_id"))
        if user is None:
            raise ApiError.bad_request("user not found")
        status = self.members.get(chat.id, {}).get(user.id, "left")
        if chat.type == "private" and user.id == chat.id:
            status = "member"
        member: dict[str, Any] = {"status": status, "user": user.to_dict()}
        if status == "creator":
            member["is_anonymous"] = False
        elif status == "administrator":
            member.update(dict.fromkeys(_ADMIN_RIGHTS, False), can_manage_chat=True, can_delete_messages=True)
        return member

    def _commands_key(self, params: Params) -> tuple[str, str]:
        scope = params.json_value("scope", "scope") or {"type": "default"}
        return json.dumps(scope, sort_keys=True), params.text("language_code")

    def set_my_commands(self, params: Params) -> bool:
        self.commands[self._commands_key(params)] = parse_commands(params)
        return True

    def get_my_commands(self, params: Params) -> list[dict[str, str]]:
        return list(self.commands.get(self._commands_key(params), []))

    def delete_my_commands(self, params: Params) -> bool:
        self.commands.pop(self._commands_key(params), None)
        return True

    def get_file(self, params: Params) -> dict[str, Any]:
        file = self.files.get(params.text("file_id"))
        if file is None:
            raise ApiError.bad_request("invalid file_id")
        return {**file.to_dict(), "file_path": file.file_path}

    def handlers(self) -> dict[str, Callable[[Params], Any]]:
        """Method name (lower-case, as Telegram matches them) -> implementation."""
        return {
            "getme": lambda _params: self.bot.to_dict() | {"can_join_groups": True,
                                                           "can_read_all_group_messages": False,
                                                           "supports_inline_queries": False},
            "sendmessage": self.send_message,
            "sendmessagedraft": self.send_message_draft,
            "senddocument": self.send_document,
            "editmessagetext": self.edit_message_text,
            "editmessagereplymarkup": self.edit_message_reply_markup,
            "deletemessage": self.delete_message,
            "answercallbackquery": self.answer_callback_query,
            "sendchataction": self.send_chat_action,
            "getchat": self.get_chat,
            "getchatmember": self.get_chat_member,
            "setmycommands": self.set_my_commands,
            "getmycommands": self.get_my_commands,
            "deletemycommands": self.delete_my_commands,
            "getfile": self.get_file,
        }  # fmt: skip


def _version(text: FormattedText | None, markup: dict[str, Any] | None, params: Params) -> TelegramMessageVersion:
    source_key = "caption" if "caption" in params.values else "text"
    return TelegramMessageVersion(
        None if text is None else text.text,
        () if text is None else text.entities,
        markup,
        params.values.get(source_key),
        params.text("parse_mode") or None,
        time.monotonic(),
    )


def _suffix(filename: str | None) -> str:
    if filename and "." in filename:
        return "." + filename.rsplit(".", 1)[1][:10]
    return ""

"""The payloads as the real client libraries see them, and import hygiene."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import telegram
from slack_sdk.models.blocks import Block
from telegram.request import BaseRequest, RequestData

from milpa_chat.renderers import JupyterRenderer, SlackRenderer, TelegramRenderer

from .samples import approvals, results


class Recorder(BaseRequest):
    """A Bot API that records what python-telegram-bot sends and answers like Telegram."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []

    async def initialize(self) -> None: ...

    async def shutdown(self) -> None: ...

    @property
    def read_timeout(self) -> float:
        return 1.0

    async def do_request(  # type: ignore[override]
        self, url: str, method: str, request_data: RequestData | None = None, **_: Any
    ) -> tuple[int, bytes]:
        params = request_data.json_parameters if request_data else {}
        self.sent.append((url.rsplit("/", 1)[-1], params))
        message = {"message_id": 1, "date": 0, "chat": {"id": 5, "type": "private"}, "text": "x"}
        return 200, json.dumps({"ok": True, "result": message}).encode()


async def test_python_telegram_bot_sends_and_edits_with_the_message_dicts_as_they_are() -> None:
    recorder = Recorder()
    bot = telegram.Bot("1:x", request=recorder)
    payload = TelegramRenderer().render_approval(approvals()["approval_pending_verification"])
    message = payload.messages[0]
    await bot.send_message(chat_id=5, **message)
    await bot.edit_message_text(chat_id=5, message_id=1, **message)
    for (method, sent), expected in zip(recorder.sent, ["sendMessage", "editMessageText"], strict=True):
        assert method == expected and sent["parse_mode"] == "HTML" and sent["text"] == message["text"]
        assert json.loads(sent["reply_markup"]) == message["reply_markup"]
        assert json.loads(sent["link_preview_options"]) == {"is_disabled": True}
    markup = telegram.InlineKeyboardMarkup.de_json(message["reply_markup"], bot)
    assert markup.inline_keyboard[0][0].callback_data == "approve:ap_7Kq2mZxR4b"


def test_every_slack_sample_round_trips_through_slack_sdk_models() -> None:
    for sample in results().values():
        for block in SlackRenderer().render(sample).blocks:
            parsed = Block.parse(block)
            assert parsed is not None and parsed.to_dict() == block


def test_jupyter_payload_displays_itself() -> None:
    from IPython.core.formatters import HTMLFormatter

    payload = JupyterRenderer().render(results()["success_dict"])
    assert HTMLFormatter()(payload) == payload.html


def test_importing_the_renderers_imports_no_channel_sdk() -> None:
    code = (
        "import sys, milpa_chat.renderers; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('telegram', 'slack_sdk', 'slack_bolt', 'ipywidgets', 'IPython')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"

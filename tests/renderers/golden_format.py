"""How a sample looks on every channel, as one readable text (the golden file format)."""

from __future__ import annotations

import json
from typing import Any

from milpa_chat.renderers import (
    ApprovalView,
    CliRenderer,
    JsonRenderer,
    JupyterRenderer,
    SlackRenderer,
    TelegramPayload,
    TelegramRenderer,
    WebRenderer,
)
from milpa_chat.renderers.jupyter import STYLE
from milpa_chat.runtime.result import ToolResult

from .checks import HIDDEN, check_cli, check_html, check_json, check_jupyter, check_slack, check_telegram

TELEGRAM, SLACK, JUPYTER = TelegramRenderer(), SlackRenderer(), JupyterRenderer()
CLI, WEB, JSON = CliRenderer(), WebRenderer(), JsonRenderer()


def _dump(value: Any) -> str:
    """Pretty JSON; characters that hide or reorder text are written as ``\\uXXXX`` escapes so the
    golden file itself stays readable (only the JSON envelope carries them raw)."""
    text = json.dumps(value, ensure_ascii=False, indent=2)
    return HIDDEN.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _telegram_sections(telegram: TelegramPayload) -> list[str]:
    sections = []
    for n, message in enumerate(telegram.messages, 1):
        sections.append(f"## telegram message {n}\n{message['text']}")
        if "reply_markup" in message:
            rows = message["reply_markup"]["inline_keyboard"]
            keys = ["  ".join(f"[{b['text']}] -> {b['callback_data']}" for b in row) for row in rows]
            sections.append("## telegram keyboard\n" + "\n".join(keys))
    if telegram.document is not None:
        doc = telegram.document
        sections.append(f"## telegram document\n{doc.filename} ({doc.mime_type}, {len(doc.content):,} bytes)")
    return sections


def describe(sample: ToolResult | ApprovalView) -> str:
    """Every channel's payload for ``sample`` (each checked for validity on the way)."""
    card = isinstance(sample, ApprovalView)

    def render(renderer: Any) -> Any:
        return renderer.render_approval(sample) if card else renderer.render(sample)

    telegram = render(TELEGRAM)
    check_telegram(telegram)
    sections = _telegram_sections(telegram)
    slack = render(SLACK)
    check_slack(slack)
    sections.append("## slack\n" + _dump(slack.message))
    if slack.document is not None:
        sections.append(f"## slack document\n{slack.document.filename} ({len(slack.document.content):,} bytes)")
    jupyter = render(JUPYTER)
    check_jupyter(jupyter)
    assert jupyter.html.startswith(STYLE)
    buttons = [f"[{b.label}] {b.style} -> {b.callback_data}" for b in jupyter.buttons]
    sections.append("## jupyter html\n" + jupyter.html[len(STYLE) + 1 :])
    sections.append("## jupyter buttons\n" + ("\n".join(buttons) or "(none)"))
    web = render(WEB)
    check_html(web)
    sections.append("## web\n" + web)
    cli = render(CLI)
    check_cli(cli)
    sections.append("## cli\n" + cli.rstrip("\n"))
    payload = render(JSON)
    if not card:
        check_json(payload)
    sections.append("## json\n" + _dump(payload))
    return "\n\n".join(sections) + "\n"

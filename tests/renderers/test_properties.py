"""Property tests: thousands of generated results, cards and messages on every channel.

Every payload must be valid for its channel (see :mod:`.checks`) and no value stored under a
secret-named key may appear anywhere, documents included. ``MILPA_RENDER_EXAMPLES`` sets the
number of generated results (default 2,000, as CI runs it).
"""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from milpa_chat.renderers import (
    ApprovalView,
    Button,
    CliRenderer,
    Document,
    JsonRenderer,
    JupyterRenderer,
    Message,
    SlackRenderer,
    TelegramRenderer,
    WebRenderer,
    parse_callback_data,
)
from milpa_chat.runtime.result import ToolResult

from .checks import check_cli, check_html, check_json, check_jupyter, check_slack, check_telegram
from .strategies import SECRET, approval_views, messages, results

EXAMPLES = int(os.environ.get("MILPA_RENDER_EXAMPLES", "2000"))
RELAXED = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
TELEGRAM, SLACK, JUPYTER = TelegramRenderer(), SlackRenderer(), JupyterRenderer()
CLI, WEB = CliRenderer(), WebRenderer()
JSON, JSON_REDACTED = JsonRenderer(), JsonRenderer(redact=True)


def _everything(payload: Any) -> str:
    """All text a payload carries, documents included."""
    documents = [getattr(payload, "document", None)]
    body = (
        payload
        if isinstance(payload, str)
        else json.dumps(
            getattr(payload, "messages", None)
            or getattr(payload, "message", None)
            or getattr(payload, "html", None)
            or payload,
            ensure_ascii=False,
            default=str,
        )
    )
    return body + "".join(d.content.decode("utf-8", "replace") for d in documents if isinstance(d, Document))


def _render_all(render: Any) -> list[Any]:
    telegram, slack, jupyter = render(TELEGRAM), render(SLACK), render(JUPYTER)
    cli, web = render(CLI), render(WEB)
    check_telegram(telegram)
    check_slack(slack)
    check_jupyter(jupyter)
    check_cli(cli)
    check_html(web)
    return [telegram, slack, jupyter, cli, web]


@settings(RELAXED, max_examples=EXAMPLES)
@given(results())
def test_every_result_is_valid_on_every_channel_and_never_shows_a_secret(result: ToolResult) -> None:
    payloads = _render_all(lambda r: r.render(result))
    envelope = JSON.render(result)
    check_json(envelope)
    payloads.append(JSON_REDACTED.render(result))
    for payload in payloads:
        assert SECRET not in _everything(payload), f"secret shown by {type(payload).__name__}"


@settings(RELAXED, max_examples=EXAMPLES // 4)
@given(approval_views())
def test_every_approval_card_is_valid_and_redacted(view: ApprovalView) -> None:
    payloads = [*_render_all(lambda r: r.render_approval(view)), JSON.render_approval(view)]
    for payload in payloads:
        assert SECRET not in _everything(payload)
    telegram = payloads[0]
    keyboard = telegram.messages[-1].get("reply_markup")
    if view.state == "pending":
        actions = [parse_callback_data(b["callback_data"]) for b in keyboard["inline_keyboard"][0]]
        expected = ["confirm", "cancel"] if view.kind == "confirm" else ["approve", "reject"]
        assert actions == [(a, view.id) for a in expected]
    else:
        assert keyboard is None and not payloads[2].buttons
        assert not any(b["type"] == "actions" for b in payloads[1].blocks)


@settings(RELAXED, max_examples=EXAMPLES // 8)
@given(messages())
def test_messages_built_by_hand_are_valid_on_every_channel(message: Message) -> None:
    _render_all(lambda r: r.render_message(message))


@settings(max_examples=300)
@given(st.text(max_size=70), st.text(max_size=70))
def test_button_data_round_trips_or_is_refused(action: str, ref: str) -> None:
    try:
        button = Button("Go", action, ref)
    except ValueError as exc:
        assert "Button" in str(exc)
        return
    assert len(button.callback_data.encode("utf-8")) <= 64
    assert parse_callback_data(button.callback_data) == (action, ref)

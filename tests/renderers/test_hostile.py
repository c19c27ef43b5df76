"""Hostile input and unicode come out safe and readable on every channel."""

from __future__ import annotations

import json

import pytest

from milpa_chat.renderers import (
    CliRenderer,
    JupyterRenderer,
    SlackRenderer,
    TelegramRenderer,
    WebRenderer,
)
from milpa_chat.runtime.result import ToolResult

from .checks import check_cli, check_html, check_slack, check_telegram, telegram_visible
from .samples import HOSTILE, UNICODE

RESULT = ToolResult.success({**HOSTILE, **UNICODE}, HOSTILE["script"])


def test_telegram_escapes_every_tag_and_entity() -> None:
    payload = TelegramRenderer().render(RESULT)
    check_telegram(payload)
    text = payload.messages[0]["text"]
    assert "<script>" not in text and "&lt;script&gt;alert('x')&lt;/script&gt;" in text
    assert "&lt;/b&gt;&lt;/pre&gt;&lt;/code&gt; &amp; &amp;amp; &amp;#x41; &amp;bogus;" in text
    shown = telegram_visible(text)
    assert "</b></pre></code> & &amp; &#x41; &bogus;" in shown  # shown exactly as the tool returned it
    assert "*bold* _it_ ~strike~ `code` [link](http://x) ```fence```" in shown  # HTML mode: no markdown


def test_slack_disarms_mentions_links_and_formatting() -> None:
    payload = SlackRenderer().render(RESULT)
    check_slack(payload)
    fields = {f["text"].split("\n", 1)[0]: f for b in payload.blocks for f in b.get("fields", [])}
    assert fields["*Slack controls*"]["text"].endswith(
        "&lt;!channel&gt; &lt;!here&gt; &lt;@U024BE7LH&gt; &lt;http://evil.example|click me&gt;"
    )
    assert fields["Markdown"]["type"] == "plain_text"
    assert payload.text == "&lt;script&gt;alert('x')&lt;/script&gt;"


@pytest.mark.parametrize("renderer", [WebRenderer(), JupyterRenderer()], ids=["web", "jupyter"])
def test_html_surfaces_escape_and_isolate_values(renderer: WebRenderer | JupyterRenderer) -> None:
    payload = renderer.render(RESULT)
    html = payload if isinstance(payload, str) else payload.html
    text = check_html(html)
    assert "<script>alert" not in html and "<script>alert('x')</script>" in text
    assert "<bdi>שלום עולם</bdi>" in html


def test_cli_never_sends_escape_sequences_to_the_terminal() -> None:
    text = CliRenderer().render(RESULT)
    check_cli(text)
    assert "\x1b" not in text and "⟨U+001B⟩[31mred⟨U+001B⟩[0m⟨U+0007⟩bell⟨U+0000⟩nul" in text


@pytest.mark.parametrize(
    "render",
    [
        lambda r: TelegramRenderer().render(r).text,
        lambda r: json.dumps(SlackRenderer().render(r).message, ensure_ascii=False),
        lambda r: WebRenderer().render(r),
        lambda r: CliRenderer().render(r),
    ],
    ids=["telegram", "slack", "web", "cli"],
)
def test_hidden_characters_are_made_visible_and_unicode_is_kept(render: object) -> None:
    shown = render(RESULT)  # type: ignore[operator]
    assert "invoice_⟨U+202E⟩gnp.exe" in shown and "pay⟨U+200B⟩pal⟨U+2060⟩.com⟨U+FEFF⟩" in shown
    assert "\u202e" not in shown and "\u200b" not in shown
    for value in UNICODE.values():
        assert value in shown, f"{value!r} was changed"


def test_lone_surrogates_and_nul_never_reach_a_payload() -> None:
    result = ToolResult.success({"bad": "\ud83d x \x00"}, "\udfff")
    check_telegram(TelegramRenderer().render(result))
    check_slack(SlackRenderer().render(result))
    check_cli(CliRenderer().render(result))
    check_html(WebRenderer().render(result))


def test_cli_aligns_wide_characters() -> None:
    text = CliRenderer().render(ToolResult.success([{"name": "東京", "n": 1}, {"name": "ab", "n": 2}]))
    lines = text.splitlines()
    assert lines[3:] == ["Name  N", "────  ─", "東京  1", "ab    2"]

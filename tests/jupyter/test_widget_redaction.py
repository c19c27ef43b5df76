"""The notebook widgets never show a secret: the ToolExplorer (the confirmation card before a
confirmed call, the result after it) and the ApprovalInbox (a pending request's card), each fed
generated payloads that hide one secret the way the redaction rule promises to catch.

Everything a widget would send to the front-end is read: every string trait of every widget in the
tree (values, descriptions, placeholders, tooltips), children included. The count of payloads
checked is printed at the end (run with ``-s``); with tests/renderers/test_redaction_everywhere.py
they make the ≥ 10,000 payloads of the redaction property.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import ipywidgets as widgets
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from milpa_chat import ToolContext, ToolRegistry, VerifyPolicy, tool
from milpa_chat.chat import Assistant, Identities
from milpa_chat.jupyter import ApprovalInbox, ToolExplorer
from milpa_chat.store import MemoryStore
from tests.renderers.test_redaction_everywhere import _leaks, payloads, secrets

CHECKED = {"explorer": 0, "inbox": 0}
_EXAMPLES = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def shown(widget: widgets.Widget, *, besides: tuple[widgets.Widget, ...] = ()) -> str:
    """Every string a widget tree holds in its synced state (``besides``: subtrees left out)."""
    out: list[str] = []
    seen: set[int] = {id(w) for w in besides}

    def visit(w: Any) -> None:
        if isinstance(w, list | tuple):
            for item in w:
                visit(item)
            return
        if not isinstance(w, widgets.Widget) or id(w) in seen:
            return
        seen.add(id(w))
        for name in w.keys:
            value = getattr(w, name, None)
            if isinstance(value, str):
                out.append(value)
            elif isinstance(value, list | tuple | widgets.Widget):
                visit(value)
            elif isinstance(value, dict):
                out.append(json.dumps(value, default=str))

    visit(widget)
    return "\n".join(out)


class Echo:
    def __init__(self) -> None:
        self.applied: list[Any] = []

    @tool("apply_config", "Apply a configuration", scopes=["ops"], mutating=True, confirm=True)
    async def apply_config(self, config: dict[str, Any]) -> dict[str, Any]:
        self.applied.append(config)
        return {"applied": config}

    @tool(
        "deploy",
        "Deploy with a configuration",
        scopes=["ops"],
        mutating=True,
        verify=VerifyPolicy(approver_scopes=("ops:approve",), expires_in=600),
    )
    async def deploy(self, config: dict[str, Any]) -> dict[str, Any]:
        return {"deployed": config}


async def _explorer_shows(args: dict[str, Any]) -> tuple[str, str, int]:
    echo = Echo()
    registry = ToolRegistry(store=MemoryStore())
    registry.scan(echo)
    explorer = ToolExplorer(registry, context=ToolContext.jupyter(scopes=["ops"]))
    form = explorer.select("apply_config")
    form["config"].widget.value = json.dumps(args)
    explorer.run_button.click()
    await explorer.idle()
    typed = (explorer.form_box,)  # what the person typed is theirs to see; everything else is the kit's
    asked = shown(explorer.widget, besides=typed)
    await explorer.confirm()
    await explorer.idle()
    return asked, shown(explorer.widget, besides=typed), len(echo.applied)


@_EXAMPLES
@given(st.data())
def test_the_explorer_never_shows_a_secret(data: st.DataObject) -> None:
    secret = data.draw(secrets)
    args = data.draw(payloads)(secret)
    asked, done, ran = asyncio.run(_explorer_shows(args))
    assert ran == 1, "the confirmed call ran"
    assert "apply_config" in asked
    assert not _leaks(secret, asked), asked
    assert not _leaks(secret, done), done
    CHECKED["explorer"] += 1


IDENTITIES = {
    "roles": {"ops": ["ops"], "approver": ["ops:approve"]},
    "users": {"telegram:1": ["ops"]},
    "approvers": {"telegram": ["-9"]},
}


async def _inbox_shows(args: dict[str, Any]) -> str:
    registry = ToolRegistry(store=MemoryStore())
    registry.scan(Echo())
    assistant = Assistant(registry, Identities.from_dict(IDENTITIES), approval_ttl=600)
    requester = ToolContext.telegram(chat_id=1, user_id=1, scopes=["ops"])
    asked = await registry.call("deploy", {"config": args}, requester)
    assert asked.data["requires_verification"] is True, asked
    inbox = ApprovalInbox(assistant, principal="maria", scopes=["ops:approve"], refresh_every=3600)
    try:
        await inbox.refresh()
        [item] = inbox.pending
        return shown(item.widget) + "\n" + item.text
    finally:
        inbox.close()


@_EXAMPLES
@given(st.data())
def test_the_inbox_never_shows_a_secret(data: st.DataObject) -> None:
    secret = data.draw(secrets)
    args = data.draw(payloads)(secret)
    text = asyncio.run(_inbox_shows(args))
    assert "deploy" in text
    assert not _leaks(secret, text), text
    CHECKED["inbox"] += 1


@pytest.fixture(scope="module", autouse=True)
def _report() -> Any:
    yield
    print(f"\nwidget payloads checked: {CHECKED} (0 secret values shown)")

"""``Assistant.handle`` never raises for what happens while handling: a store that fails and a surface
that refuses even the apology end in one log line that says nobody could be told, and the surface's own
last way (``report_failure``) is tried when it has one."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from milpa_chat import ToolRegistry, tool
from milpa_chat.chat import Assistant, ChatUser, Identities, Surface, Traits
from milpa_chat.chat.inbound import Inbound, MessageRef
from milpa_chat.errors import StoreError
from milpa_chat.renderers import Message
from milpa_chat.store import MemoryStore

ANA = ChatUser("1", "Ana", "ana")


class BrokenStore(MemoryStore):
    async def insert(self, *args: Any, **kwargs: Any) -> Any:
        raise StoreError("the database is away")


class RefusingSurface(Surface):
    """A surface whose every call fails (the platform is down), optionally with a last way to tell."""

    surface = "telegram"

    def __init__(self, last_resort: bool) -> None:
        self.reported: list[tuple[str, str]] = []
        self._traits = Traits(reports_failures=last_resort)

    async def send(self, chat_id: str, message: Message) -> MessageRef:
        raise ConnectionError("platform unreachable")

    async def edit(self, ref: MessageRef, message: Message) -> None:
        raise ConnectionError("platform unreachable")

    async def answer(self, inbound: Inbound, text: str, *, alert: bool = False) -> None:
        raise ConnectionError("platform unreachable")

    async def typing(self, chat_id: str) -> None:
        raise ConnectionError("platform unreachable")

    async def report_failure(self, inbound: Inbound, exc: BaseException) -> bool:
        self.reported.append((inbound.chat_id, type(exc).__name__))
        return True


class Notes:
    @tool("list_notes", "List notes", mutating=False)
    def list_notes(self) -> list[str]:
        return ["milk"]


@pytest.mark.parametrize("last_resort", [False, True], ids=["no last resort", "report_failure"])
async def test_a_failing_store_and_a_refusing_surface_raise_nothing(
    last_resort: bool, caplog: pytest.LogCaptureFixture
) -> None:
    registry = ToolRegistry(store=BrokenStore())
    registry.scan(Notes())
    assistant = Assistant(registry, Identities.from_dict({"defaults": {"scopes": ["*"]}}))
    surface = RefusingSurface(last_resort)
    inbound = Inbound("telegram", "1", ANA, text="/list_notes", delivery_id="77")
    with caplog.at_level(logging.ERROR, logger="milpa_chat"):
        await assistant.handle(inbound, surface)
    [line] = [r for r in caplog.records if "failed" in r.getMessage()]
    said = "the person was told" if last_resort else "nobody could be told"
    assert said in line.getMessage() and "StoreError" in line.getMessage()
    assert surface.reported == ([("1", "StoreError")] if last_resort else [])

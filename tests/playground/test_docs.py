"""docs/playground.md: its example tools load with ``--tools module:Class`` from the current directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from milpa_chat.playground.world import PlaygroundError, load_registry
from milpa_chat.store import MemoryStore
from tests.docs_examples import python_blocks, run_page


async def test_the_example_tools_load_as_a_tools_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_page("playground.md")
    (tmp_path / "shop.py").write_text("\n".join(python_blocks("playground.md")), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    store = MemoryStore()
    registry = await load_registry("shop:ShopTools", store)
    assert {"list_orders", "refund"} <= {t.name for t in registry}
    refund = next(t for t in registry if t.name == "refund")
    assert refund.verify is not None and refund.verify.quorum == 2
    result = await registry.call("list_orders", {"page": 500})
    assert result.success and result.data["page"] == 100


async def test_a_tools_option_without_tools_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "empty.py").write_text("class Nothing:\n    pass\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PlaygroundError, match="found no @tool functions"):
        await load_registry("empty:Nothing", MemoryStore())
    with pytest.raises(PlaygroundError, match=r"write it as package\.module:object"):
        await load_registry("empty", MemoryStore())
    with pytest.raises(PlaygroundError, match="has no attribute 'Missing'"):
        await load_registry("empty:Missing", MemoryStore())

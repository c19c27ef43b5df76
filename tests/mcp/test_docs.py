"""docs/mcp.md runs: every ``python`` block, in order, in one fresh module (as a reader would paste them)."""

from __future__ import annotations

from tests.docs_examples import python_blocks, run_page


def test_every_example_in_docs_mcp_md_runs() -> None:
    module = run_page("mcp.md")
    assert len(python_blocks("mcp.md")) >= 4
    assert module.payments.sent == [("ACME", 30.0)], "the approved payment ran once, after approval_run"
    assert callable(module.mcp_server) and module.app is not None

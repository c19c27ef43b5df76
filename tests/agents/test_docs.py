"""docs/agents.md runs: every ``python`` block, in order, in one fresh module (as a reader would paste them)."""

from __future__ import annotations

from tests.docs_examples import python_blocks, run_page


def test_every_example_in_docs_agents_md_runs() -> None:
    module = run_page("agents.md")
    assert len(python_blocks("agents.md")) >= 5
    ran = [(to, float(amount)) for to, amount, _ in module.paid]
    # then the standing grant's example: the confirmed payment, and the one the signed grant lent (no card)
    approved = [("ACME", 120.0), ("ACME", 30.0), ("ACME", 45.0), ("ACME", 60.0), ("ACME", 120.0), ("ACME", 120.0)]
    assert ran == approved, "each approved or lent call ran once"
    assert all(key for _, _, key in module.paid), "each run had its approval id as idempotency key"

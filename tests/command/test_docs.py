"""docs/command.md runs: every ``python`` block, in order, in one fresh module (as a reader would paste them)."""

from __future__ import annotations

from tests.docs_examples import python_blocks, run_page


def test_the_page_has_examples() -> None:
    assert len(python_blocks("command.md")) >= 4


def test_every_example_in_docs_command_md_runs() -> None:
    module = run_page("command.md")
    assert "n1" not in module.notes.notes, "the declared operation ran once, after the confirmation"

"""docs/grants.md runs: every ``python`` block, in order, in one fresh module (as a reader would paste them)."""

from __future__ import annotations

import pytest

from tests.docs_examples import python_blocks, run_page


def test_the_model_has_examples() -> None:
    assert len(python_blocks("grants.md")) >= 6


def test_every_example_in_docs_grants_md_runs(capsys: pytest.CaptureFixture[str]) -> None:
    module = run_page("grants.md")
    assert module.verdict.passes() and module.beside.stopped_beside
    printed = capsys.readouterr().out
    assert 'standing grant "release-stable-1" is suspended: a machine name was found in 1.4.2' in printed
    assert "note: is not read here" in printed

"""The notebooks in notebooks/ run top to bottom in a real kernel (nbclient + ipykernel), unattended."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
NAMES = ["01_explore_tools.ipynb", "02_approvals.ipynb", "04_operations.ipynb", "05_agents.ipynb"]


def execute(name: str) -> Any:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        store_widget_state=True,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    env.pop("MILPA_NOTEBOOK_HUMAN", None)  # unattended: the notebook clicks for the human
    client.execute(env=env)
    return nb


def printed(nb: Any) -> str:
    return "".join(
        out.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.output_type == "stream" and out.name == "stdout"
    )


def widget_values(nb: Any, model: str) -> list[Any]:
    states = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    return [s["state"].get("value") for s in states.values() if s["model_name"] == model]


@pytest.mark.parametrize("name", NAMES)
def test_notebooks_are_committed_without_outputs(name: str) -> None:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{name}: clear the outputs before committing"
    assert "widgets" not in nb.metadata, f"{name}: saved widget state; clear it before committing"


@pytest.mark.slow
def test_explore_tools_notebook() -> None:
    nb = execute("01_explore_tools.ipynb")
    out = printed(nb)
    assert "Page 2 of 3" in out and "['◀ Previous', 'Next ▶']" in out and "Page 3 of 3" in out
    assert "Dry run: delete_note" in out and "Nothing was run (plan mode)" in out
    assert "query: Missing required field" in out and "Unknown property 'colour'" in out
    assert "filters: not valid JSON" in out
    assert "Run `delete_note(note_id=5)`?" in out and "Deleted: 5" in out
    assert "cancelled None" in out
    html = "".join(v for v in widget_values(nb, "HTMLModel") if isinstance(v, str))
    assert "Tool explorer" in html and "Deleted" in html and "Cancelled: delete_note" in html


@pytest.mark.slow
def test_approvals_notebook() -> None:
    nb = execute("02_approvals.ipynb")
    out = printed(nb)
    assert "Approval needed: pay" in out and "***REDACTED***" in out and "sk-live-4242" not in out
    assert "executed — decided by Maria via jupyter" in out
    assert "Approved by Maria via Jupyter" in out and "Note: Invoice 7 checked" in out
    assert "buttons left: []" in out and "Paid: 120" in out
    assert "Rejected by Bruno via Telegram" in out
    html = "".join(v for v in widget_values(nb, "HTMLModel") if isinstance(v, str))
    assert "Approvals for Maria (jupyter:maria)" in html and "Approved by Maria via Jupyter" in html


@pytest.mark.slow
def test_operations_notebook() -> None:
    nb = execute("04_operations.ipynb")
    out = printed(nb)
    assert "fields: ['note_id', 'reason']" in out and "asks to confirm: True | still there: True" in out
    assert "By:      jupyter:dev" in out and "archived: {'n3': 'old draft'}" in out
    assert "eve: FORBIDDEN" in out and "alice: {'note_id': 'n1', 'reason': 'done', 'by': 'telegram:7'}" in out
    assert "registry: notes_archive | mutating: True | confirm: True | scopes: ('notes:write',)" in out
    assert (
        "mcp: notes_archive {'openWorldHint': False, 'readOnlyHint': False, 'destructiveHint': False, "
        "'idempotentHint': False}"
    ) in out
    archive = "Archive a note (it leaves the list, it can be restored)."
    assert f"{{'command': 'notes_archive', 'description': '{archive}'}}" in out
    assert "telegram, no scopes: ['tools', 'help']" in out
    assert "slack: /milpa notes_archive <note_id: string> [reason: done|stale = done]" in out
    assert "usage: milpa-chat run notes_archive" in out and "--reason {done,stale}" in out
    html = "".join(v for v in widget_values(nb, "HTMLModel") if isinstance(v, str))
    assert "Tool explorer" in html and "notes_archive" in html


@pytest.mark.slow
def test_agents_notebook() -> None:
    nb = execute("05_agents.ipynb")
    out = printed(nb)
    assert "waiting: send_payment {'to': 'ACME', 'amount': 120.0}" in out
    assert "agent: Done: Paid 120.00 EUR to ACME." in out
    assert "paid: [('ACME', 120.0)] | key is the approval: True" in out
    assert "agent: Done: Rejected by Maria: already paid." in out and "paid: 1 time(s)" in out
    html = "".join(v for v in widget_values(nb, "HTMLModel") if isinstance(v, str))
    assert "send_payment" in html and "Rejected by Maria" in html

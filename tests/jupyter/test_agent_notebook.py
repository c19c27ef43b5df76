"""notebooks/03_agent.ipynb runs top to bottom in a real kernel: an agent loop against the local FakeOpenAIServer,
a confirm tool that pauses the run, Confirm (the tool runs once, the agent resumes) and Cancel (it never runs, the
model is told)."""

from __future__ import annotations

import re

import nbformat
import pytest

from tests.jupyter.test_notebooks import NOTEBOOKS, execute, printed, widget_values

NAME = "03_agent.ipynb"


def test_agent_notebook_is_committed_without_outputs() -> None:
    nb = nbformat.read(NOTEBOOKS / NAME, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{NAME}: clear the outputs before committing"
    assert "widgets" not in nb.metadata, f"{NAME}: saved widget state; clear it before committing"


@pytest.mark.slow
def test_agent_notebook() -> None:
    nb = execute(NAME)
    out = printed(nb)

    # A question: the read tool ran, its result went back as a tool message, the model answered.
    assert "answered after 2 model calls; tools run: ['find_orders']" in out
    assert "answer: Luis has two orders: A-17, hiking boots" in out
    # What the observer saw: the OpenAI wire format, tools as function definitions.
    assert re.search(r"POST http://127\.0\.0\.1:\d+/v1/chat/completions", out)
    assert '{"role": "tool", "tool_call_id": "call_' in out and '\\"item\\": \\"hiking boots\\"' in out
    assert "tools: ['find_orders', 'refund_order']" in out and '"name": "refund_order"' in out

    # The risky call paused twice; Confirm ran it once and the agent answered; Cancel never ran it.
    assert out.count("paused on confirmation of refund_order") == 2
    assert "paused on confirmation of refund_order {'order_id': 'A-17'}" in out
    assert "paused on confirmation of refund_order {'order_id': 'A-21'}" in out
    refunds = re.findall(r"^refunds so far: (.*)$", out, flags=re.MULTILINE)
    assert refunds == ["[]", "[('A-17', 89.0)]", "[('A-17', 89.0)]"]
    assert 'confirmed → the model was sent: {"success": true, "data": {"refunded": 89.0, "order": "A-17"}}' in out
    assert "answered — Done: order A-17 is refunded, 89.00 EUR back to Luis." in out
    assert (
        'cancelled → the model was sent: {"success": false, "error": "Maria cancelled this call; it was not run.' in out
    )
    assert "answered — All right, I did not refund A-21" in out

    # The prompts as left in the notebook: the first shows the tool's result, the second the cancellation.
    html = "".join(v for v in widget_values(nb, "HTMLModel") if isinstance(v, str))
    assert "Done" in html and "<bdi>A-17</bdi>" in html
    assert "Cancelled: refund_order" in html and "Nothing was done." in html

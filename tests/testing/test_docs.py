"""docs/testing.md runs: every ``python`` block, in order, in one fresh module (as a reader would paste them),
then every test the page defines, as pytest would run it."""

from __future__ import annotations

import asyncio
import inspect

from tests.docs_examples import python_blocks, run_page


def test_every_example_in_docs_testing_md_runs() -> None:
    module = run_page("testing.md")
    assert len(python_blocks("testing.md")) >= 7
    tests = {
        name: value
        for name, value in vars(module).items()
        if name.startswith("test_") and inspect.iscoroutinefunction(value)
    }
    assert {
        "test_my_handler_beside_the_kit",
        "test_my_listener_beside_the_kit",
        "test_eventually_with_my_own_state",
        "test_approve_button",
        "test_webhook_deliveries",
        "test_deploy_card",
    } <= set(tests)
    for test in tests.values():
        asyncio.run(asyncio.wait_for(test(), 60))  # each in a fresh event loop, as pytest-asyncio does
    assert module.clock() == 1_800_003_600.0 and module.card.text == "Approved by <@U9>"

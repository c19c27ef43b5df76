"""Every numbered rule of the standing-grant contract has a test: a table row named by it, or a test that covers it."""

from __future__ import annotations

import importlib
import pkgutil
import re
from types import ModuleType

from _pytest.mark.structures import ParameterSet

import tests.command.grants as package
from tests.command.grants.rules import ALL_RULES

_RULE = re.compile(r"SG-\d{3}")


def _modules() -> list[ModuleType]:
    return [
        importlib.import_module(f"{package.__name__}.{info.name}")
        for info in pkgutil.iter_modules(package.__path__)
        if info.name.startswith("test_") and info.name != "test_coverage"
    ]


def covered() -> set[str]:
    """The rule ids named by the table rows and ``@covers`` of every test module here."""
    found: set[str] = set()
    for module in _modules():
        for name, test in vars(module).items():
            if not name.startswith("test_") or not callable(test):
                continue
            found.update(getattr(test, "covers", ()))
            for mark in getattr(test, "pytestmark", []):
                if mark.name != "parametrize":
                    continue
                for row in mark.args[1]:
                    if isinstance(row, ParameterSet) and isinstance(row.id, str):
                        found.update(_RULE.findall(row.id))
    return found


def test_every_rule_has_a_test() -> None:
    assert len(ALL_RULES) == len(set(ALL_RULES)) == 133
    missing = [rule_id for rule_id in ALL_RULES if rule_id not in covered()]
    assert missing == []


def test_no_test_names_a_rule_that_does_not_exist() -> None:
    assert covered() <= set(ALL_RULES)

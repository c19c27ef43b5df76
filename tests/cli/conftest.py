from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.support import Shell


@pytest.fixture
def shell(tmp_path: Path) -> Shell:
    return Shell.make(tmp_path)

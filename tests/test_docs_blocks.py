"""Every Python and shell block of README.md and docs/*.md runs as pasted (the rules: tests/docs_examples.py).

Each page runs in a fresh process in an empty temporary folder; the test prints how many blocks ran and how many
a ``# needs:`` marker skipped, with the reasons, and fails naming every block that did not run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.docs_examples import OUTCOME, PAGES, ROOT, SHELL, blocks


def _run(page: Path, folder: Path) -> list[dict[str, Any]]:
    folder.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    for key in ("TELEGRAM_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "SLACK_BOT_TOKEN"):
        env.pop(key, None)  # a newcomer's shell has none of these
    name = str(page.relative_to(ROOT)) if page.parent == ROOT else page.name
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tests.docs_examples", name, str(folder)],
            cwd=ROOT,
            env=env,
            text=True,
            capture_output=True,
            timeout=600,
        )
    except subprocess.TimeoutExpired as exc:
        return [{"block": name, "status": "failed", "reason": f"the page did not finish in {exc.timeout} s"}]
    outcomes = [json.loads(line.removeprefix(OUTCOME)) for line in done.stdout.splitlines() if line.startswith(OUTCOME)]
    expected = sum(1 for b in blocks(name) if b.lang in (*SHELL, "python", "py"))
    if len(outcomes) < expected:
        stopped = f"the page stopped after {len(outcomes)} of {expected} blocks: {done.stderr[-2000:]}"
        outcomes.append({"block": name, "status": "failed", "reason": stopped})
    return outcomes


def test_every_python_and_shell_block_runs_as_pasted(tmp_path: Path) -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda p: _run(p, tmp_path / p.stem), PAGES))
    outcomes = [o for page in results for o in page]
    ran = [o for o in outcomes if o["status"] == "ran"]
    skipped = [o for o in outcomes if o["status"] == "skipped"]
    failed = [o for o in outcomes if o["status"] == "failed"]
    lines = [o for o in ran if o.get("skipped_lines")]
    print(f"\ndocs blocks: {len(ran)} ran, {len(skipped)} skipped, {len(failed)} failed (of {len(outcomes)})")
    for o in skipped:
        print(f"  skipped {o['block']}: {o['reason']}")
    for o in lines:
        for line in o["skipped_lines"]:
            print(f"  skipped in {o['block']}: {line}")
    for o in failed:
        print(f"  FAILED {o['block']}: {str(o['reason']).splitlines()[0] if o['reason'] else ''}")
    assert not failed, "\n\n".join(f"{o['block']}: {o['reason']}" for o in failed)

"""Drive notebooks/02_approvals.ipynb in JupyterLab with Debian's Chromium (Playwright's Python API).

Run by tests/e2e/test_browser.py in a process group of its own, under a timeout; usable by hand too::

    python tests/e2e/drive_lab.py tests/e2e/artifacts

JupyterLab starts on 127.0.0.1 with a token, in a scratch directory holding a copy of the notebook
and scratch Jupyter settings/workspaces (nothing in the home directory is read or changed). The
notebook runs with MILPA_NOTEBOOK_HUMAN=1, so its decision cell waits for a real click on Approve.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "02_approvals.ipynb"
CHROMIUM = os.environ.get("MILPA_CHROMIUM", "/usr/bin/chromium")
STARTED = time.monotonic()
WAIT_MS = 60_000
KERNEL_IDLE = """() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.status === 'idle'; }"""


def say(step: str) -> None:
    print(f"[{time.monotonic() - STARTED:6.1f} s] {step}", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scratch_jupyter(base: Path) -> dict[str, str]:
    """Environment for JupyterLab and its kernels: scratch config, settings and workspaces."""
    settings = base / "lab-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    dirs = {
        "JUPYTER_CONFIG_DIR": "config",
        "JUPYTER_RUNTIME_DIR": "runtime",
        "JUPYTERLAB_WORKSPACES_DIR": "workspaces",
        "JUPYTERLAB_SETTINGS_DIR": "lab-settings",
    }
    env = {**os.environ, **{k: str(base / v) for k, v in dirs.items()}}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env["MILPA_NOTEBOOK_HUMAN"] = "1"
    return env


@contextmanager
def jupyter_lab(base: Path) -> Iterator[tuple[str, str]]:
    """JupyterLab on 127.0.0.1 serving ``base/notebooks``; yields (url, token)."""
    notebooks = base / "notebooks"
    notebooks.mkdir()
    shutil.copy(NOTEBOOK, notebooks / NOTEBOOK.name)
    port, token = free_port(), secrets.token_hex(16)
    log = (base / "jupyter.log").open("w")
    command = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        "--allow-root",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={notebooks}",
        "--LabApp.expose_app_in_browser=True",
    ]
    server = subprocess.Popen(command, env=scratch_jupyter(base), stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_server(url, token, server)
        say(f"JupyterLab {url} is up")
        yield url, token
    finally:
        stop_server(url, token, server)
        log.close()


def wait_for_server(url: str, token: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {server.returncode}; see jupyter.log")
        try:
            with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2):
                return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError("JupyterLab did not answer /api/status within 60 s")


def stop_server(url: str, token: str, server: subprocess.Popen[bytes]) -> None:
    """Shut down kernels and server through the API, then make sure the process is gone."""
    try:
        request = urllib.request.Request(f"{url}/api/shutdown?token={token}", method="POST")
        urllib.request.urlopen(request, timeout=10).close()
        server.wait(timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
    say("JupyterLab stopped")


def approve_in_the_browser(url: str, token: str, artifacts: Path) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(WAIT_MS)
        try:
            return run_notebook_and_approve(page, url, token, artifacts)
        except Exception:
            page.screenshot(path=str(artifacts / "02_approvals_failure.png"))
            say_outputs(page)
            raise
        finally:
            browser.close()


def say_outputs(page: Any) -> None:
    """Print what every cell printed so far (errors included), so a failed run says which cell stopped."""
    try:
        texts = page.locator(".jp-OutputArea-output").all_inner_texts()
    except Exception as exc:  # the page itself may be gone
        say(f"could not read the cells' outputs: {exc}")
        return
    say(f"the notebook's outputs when it stopped ({len(texts)}):")
    for number, text in enumerate(texts, 1):
        say(f"  [{number}] " + text.strip().replace("\n", "\n      ")[:2000])


def run_notebook_and_approve(page: Any, url: str, token: str, artifacts: Path) -> dict[str, Any]:
    page.goto(f"{url}/lab/tree/{NOTEBOOK.name}?token={token}")
    page.wait_for_selector(".jp-Notebook")
    page.wait_for_function(KERNEL_IDLE, timeout=WAIT_MS)
    say("notebook open, kernel idle; running all cells")
    # Not awaited: the promise resolves only when every cell has finished, i.e. after the click.
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    outputs = page.locator(".jp-OutputArea-output")
    approve = outputs.locator("button.jupyter-button", has_text="Approve")
    approve.wait_for()
    say("the inbox shows Ana's request; typing a reason and clicking Approve")
    outputs.locator("input[placeholder='Reason (optional)']").fill("Checked in the browser")
    approve.click()
    decided = outputs.locator(".widget-html", has_text="Approved by Maria via Jupyter").first
    decided.wait_for()
    say("the inbox shows the decision")
    outputs.filter(has_text="Rejected by Bruno via Telegram").first.wait_for()
    page.wait_for_function(KERNEL_IDLE, timeout=WAIT_MS)
    say("every cell ran")
    printed = "\n".join(outputs.all_inner_texts())
    decided.scroll_into_view_if_needed()
    shot = artifacts / "02_approvals_approved.png"
    page.screenshot(path=str(shot))
    say(f"screenshot {shot}")
    return {
        "printed": printed,
        "approve_buttons_left": approve.count(),
        "screenshot": str(shot),
        "errors": outputs.locator("[data-mime-type='application/vnd.jupyter.stderr']").all_inner_texts(),
    }


def main() -> int:
    artifacts = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "tests" / "e2e" / "artifacts").resolve()
    artifacts.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="milpa-e2e-") as scratch:
        base = Path(scratch)
        try:
            with jupyter_lab(base) as (url, token):
                report = approve_in_the_browser(url, token, artifacts)
        finally:
            log = base / "jupyter.log"
            if log.exists():
                shutil.copy(log, artifacts / "jupyter.log")
    (artifacts / "report.json").write_text(json.dumps(report, indent=2, ensure_ascii=False))
    say("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())

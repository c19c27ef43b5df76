# Two commands on a fresh clone:
#   make demo   — the pipeline walk-through on SQLite (no tokens, no network)
#   make test   — lint, types and the whole test suite (the browser test needs /usr/bin/chromium:
#                 apt-get install -y chromium; without it that one test is skipped, in CI it fails)
# Both create .venv and install the project into it on first use.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.milpa-installed

.PHONY: demo test lint types pytest bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev,e2e]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/milpa-chat demo

lint: $(STAMP)
	$(BIN)/ruff check milpa_chat tests bench bots

types: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest

test: lint types pytest

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[dev,bench]"
	$(BIN)/python bench/registry.py
	$(BIN)/python bench/store.py
	$(BIN)/python bench/renderers.py
	$(BIN)/python bench/telegram.py
	$(BIN)/python bench/slack.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis

# On a fresh clone:
#   make playground — the assistant in your browser: the real Telegram and Slack adapters on local servers,
#                     approval cards, personas to switch between (no tokens, no network); Ctrl-C stops it
#   make test       — lint, types and the whole test suite (the browser tests need /usr/bin/chromium:
#                     apt-get install -y chromium fonts-noto-color-emoji — without the fonts Debian's Chromium
#                     shows the cards' emoji as boxes; without Chromium those tests are skipped, in CI they fail)
#   make demo       — the pipeline walk-through in the terminal, on SQLite
# Each creates .venv and installs the project into it on first use.
# make check-playground plays the playground's scripted tour headless and exits 0 when every step passed.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.milpa-installed

.PHONY: playground check-playground demo test lint types pytest bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev,e2e]"
	touch $(STAMP)

playground: $(STAMP)
	$(BIN)/milpa-chat playground

check-playground: $(STAMP)
	$(BIN)/milpa-chat playground --check

demo: $(STAMP)
	$(BIN)/milpa-chat demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

types: $(STAMP)  # the package strictly and tests/ (bodies checked), as [tool.mypy] in pyproject.toml says
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest

test: lint types pytest

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[dev,bench]"
	$(BIN)/python bench/registry.py
	$(BIN)/python bench/store.py   # store operations; PostgreSQL too (MILPA_BENCH_POSTGRES_DSN), skipped when it does not answer
	$(BIN)/python bench/renderers.py
	$(BIN)/python bench/telegram.py
	$(BIN)/python bench/slack.py
	$(BIN)/python bench/approvals.py   # approvals end to end; PostgreSQL too (MILPA_BENCH_POSTGRES_DSN), skipped when it does not answer
	$(BIN)/python bench/streaming.py
	$(BIN)/python bench/fleet.py   # PostgreSQL (MILPA_BENCH_POSTGRES_DSN) and /usr/sbin/haproxy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis

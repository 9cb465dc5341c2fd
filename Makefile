# The two commands the README promises: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint lint-imports typecheck check screenshots bench fixture-archive clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/io-tui demo

test: $(STAMP)
	env -u NO_COLOR $(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check io_tui tests benchmarks scripts
	$(BIN)/ruff format --check io_tui tests benchmarks scripts
	$(BIN)/lint-imports --no-cache --no-logo \
		--contract core-without-ui --contract cli-through-face --contract ui-through-face
# PENDING (issue 14): lint-imports fails until the last import circles are cut; until then it
# prints what it finds and lint goes on. To make it count, drop the '-' below and the line above
# it (which lint-imports then covers).
	-$(MAKE) --no-print-directory lint-imports

# The import structure: every import-linter contract in pyproject.toml (the core never imports
# the UI, textual or rich; the CLI and the UI take the core through its face; no cycle between
# sibling packages) and no import cycle between modules, each printed with the names that tie it.
lint-imports: $(STAMP)
	$(BIN)/lint-imports --no-cache --no-logo; contracts=$$?; \
	$(BIN)/python scripts/check_import_cycles.py io_tui && exit $$contracts

typecheck: $(STAMP)
	$(BIN)/mypy

check: lint typecheck test

screenshots: $(STAMP)
	env -u NO_COLOR $(BIN)/python scripts/export_screenshots.py

bench: $(STAMP)
	for b in benchmarks/*.py; do $(BIN)/python $$b || exit 1; done

# The benchmarks' pinned fixture (benchmarks/fixture_repo.tar.gz), rewritten from its git commit.
fixture-archive: $(STAMP)
	$(BIN)/python benchmarks/fixture_repo.py --build

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

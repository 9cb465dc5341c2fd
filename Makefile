# The two commands the README promises: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck check screenshots bench fixture-archive clean

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
	$(BIN)/ruff check io_tui tests benchmarks
	$(BIN)/ruff format --check io_tui tests benchmarks

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

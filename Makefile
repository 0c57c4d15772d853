# evenhand: `make demo` runs the main job, `make test` runs the test suite.
# Both create the virtualenv and install everything on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-fast lint typecheck bench clean

setup: $(STAMP)

# torch first, pinned to the CPU build on local disk (any other torch pulls CUDA).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: setup
	$(BIN)/evenhand demo

lint: setup
	$(BIN)/ruff check .

# pyright (standard mode) on the five packages, configured in pyproject.toml's [tool.pyright]
typecheck: setup
	$(BIN)/pyright

test: lint typecheck
	$(BIN)/python -m pytest -q --durations=10

test-fast: lint
	$(BIN)/python -m pytest -q -m "not slow and not server"

bench: setup
	for b in benchmarks/bench_*.py; do $(BIN)/python -m benchmarks.$$(basename $$b .py) || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

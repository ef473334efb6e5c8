# fundpipe — the two commands: `make run` and `make test`. Both set everything up on a machine
# that has only Python (>= 3.11) and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: run test install lint typecheck unit bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip uv
	$(BIN)/uv pip install -q --python $(BIN)/python -e '.[dev]'
	touch $(STAMP)

install: $(STAMP) ## create .venv and install fundpipe with its test tools

run: install ## run the nightly job on the embedded sandbox with the sample files
	$(BIN)/fundpipe run --samples

lint: install
	$(BIN)/ruff check src tests flows benchmarks
	$(BIN)/ruff format --check src tests flows benchmarks

typecheck: install
	$(BIN)/mypy

# The suite runs on both cores; the end-to-end tests then run after it, because Prefect's
# temporary server (SQLite) times out when it has to fight the parallel suite for the CPU. Of
# those, the ones that start servers and nights run one after another; the late-night alert
# test, which mostly waits for a deadline on the wall clock, runs beside them
# (tests/e2e/conftest.py).
unit: install
	$(BIN)/pytest -n 2 --dist loadfile -m "not e2e" --durations=5
	$(BIN)/pytest -m e2e tests/e2e -n 2 --dist loadgroup --durations=10

test: lint typecheck unit ## install, lint, type-check and run the whole suite

bench: install
	$(BIN)/uv pip install -q --python $(BIN)/python -e '.[dev,bench]'
	for b in benchmarks/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache data/reports data/warehouse.duckdb

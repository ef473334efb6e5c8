# fundpipe — the two commands: `make run` and `make test`. Both set everything up on a machine
# that has only Python (>= 3.11) and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: run test install lint typecheck unit suite bench clean

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
# temporary server (SQLite) times out when it has to fight the parallel suite for the CPU. They
# run a file at a time on each of two workers, longest first (tests/e2e/conftest.py).
# What mostly waits starts first, in the background, while lint, mypy (one core) and the suite
# run: the late-night alert test, which waits minutes for a deadline on the wall clock (its
# output is printed after the suite's; either failing fails `make`), and one Prefect server
# start whose home the end-to-end tests' homes start as copies of (tests/e2e/prefect_processes.py:
# HOME_TEMPLATE). Both pytest runs keep xdist's files in the order collected
# (`--no-loadscope-reorder`): slow files first (tests/conftest.py).
WAITS    := tests/e2e/test_deadline_alert.py
E2E_HOME := .pytest_cache/e2e-prefect-home

define beside_then_e2e
	@beside=$$(mktemp); \
	$(BIN)/pytest -m e2e $(WAITS) -p no:cacheprovider --durations=1 >>$$beside 2>&1 & waits=$$!; \
	$(BIN)/python tests/e2e/prefect_processes.py $(E2E_HOME) >>$$beside 2>&1 & home=$$!; \
	echo "$(BIN)/pytest -m e2e $(WAITS) (in the background, its output below)"; \
	$(MAKE) --no-print-directory $(1); made=$$?; \
	wait $$waits; waited=$$?; wait $$home; cat $$beside; rm -f $$beside; \
	test $$made -eq 0 -a $$waited -eq 0
	E2E_PREFECT_HOME_TEMPLATE=$(CURDIR)/$(E2E_HOME) $(BIN)/pytest -m e2e tests/e2e \
		--deselect $(WAITS) -n 2 --dist loadfile --no-loadscope-reorder --durations=10
endef

suite: install
	$(BIN)/pytest -n 2 --dist loadfile --no-loadscope-reorder -m "not e2e" --durations=5

unit: install
	$(call beside_then_e2e,suite)

test: install ## install, lint, type-check and run the whole suite
	$(call beside_then_e2e,lint typecheck suite)

bench: install
	$(BIN)/uv pip install -q --python $(BIN)/python -e '.[dev,bench]'
	for b in benchmarks/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache data/reports data/warehouse.duckdb

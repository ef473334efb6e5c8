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
# temporary server (SQLite) times out when it has to fight the parallel suite for the CPU. They
# run a file at a time on each of two workers, longest first (tests/e2e/conftest.py). The
# late-night alert test mostly waits minutes for a deadline on the wall clock: it runs alone
# beside the unit suite, its output printed after the suite's; either failing fails `make`.
# Both pytest runs keep xdist's files in the order collected (`--no-loadscope-reorder`): the
# files with slow tests first, so no worker ends the run alone with a long file.
WAITS := tests/e2e/test_deadline_alert.py

unit: install
	@waits_log=$$(mktemp); \
	$(BIN)/pytest -m e2e $(WAITS) -p no:cacheprovider --durations=1 >$$waits_log 2>&1 & waits=$$!; \
	echo "$(BIN)/pytest -m e2e $(WAITS) (beside the unit suite, output below it)"; \
	echo '$(BIN)/pytest -n 2 --dist loadfile --no-loadscope-reorder -m "not e2e" --durations=5'; \
	$(BIN)/pytest -n 2 --dist loadfile --no-loadscope-reorder -m "not e2e" --durations=5; \
	suite=$$?; wait $$waits; waited=$$?; cat $$waits_log; rm -f $$waits_log; \
	test $$suite -eq 0 -a $$waited -eq 0
	$(BIN)/pytest -m e2e tests/e2e --deselect $(WAITS) -n 2 --dist loadfile \
		--no-loadscope-reorder --durations=10

test: lint typecheck unit ## install, lint, type-check and run the whole suite

bench: install
	$(BIN)/uv pip install -q --python $(BIN)/python -e '.[dev,bench]'
	for b in benchmarks/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache data/reports data/warehouse.duckdb

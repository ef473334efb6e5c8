# fundpipe — the two commands: `make run` and `make test`. Both set everything up on a machine
# that has only Python (>= 3.11) and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: run test any-day install lint typecheck suite bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip uv
	$(BIN)/uv pip install -q --python $(BIN)/python -e '.[dev]'
	touch $(STAMP)

install: $(STAMP) ## create .venv and install fundpipe with its test tools

run: install ## run the nightly job on the embedded sandbox with the sample files
	@$(BIN)/fundpipe run --samples; rc=$$?; \
	echo "the finance desk: $(BIN)/fundpipe desk, then open http://127.0.0.1:8765/ (its first start prints a one-time link for the first admin; README: The finance desk)"; \
	exit $$rc

lint: install
	$(BIN)/ruff check src tests flows benchmarks
	$(BIN)/ruff format --check src tests flows benchmarks

typecheck: install
	$(BIN)/mypy

# `make test` is tests/make_test.sh: lint, mypy, the unit suite, the late-night alert test in the
# background, then the browser tests (the desk in Debian's chromium, installed when running as
# root), then the end-to-end tests. Every part runs whichever failed; the last lines give
# each part's counts and the total. `make any-day` runs the unit suite a year ahead and a year
# back under Debian's faketime (installed when running as root): .ci/run runs it after
# `make test`. `make suite` is the unit suite alone.
suite: install
	$(BIN)/pytest -n 2 --dist loadfile --no-loadscope-reorder -m "not e2e and not browser" --durations=5

test: install ## install, lint, type-check and run the whole suite (every part, every time)
	BIN=$(BIN) bash tests/make_test.sh

any-day: install ## the unit suite a year ahead and a year back (no test keeps a date)
	BIN=$(BIN) bash tests/make_test.sh --any-day

bench: install
	$(BIN)/uv pip install -q --python $(BIN)/python -e '.[dev,bench]'
	for b in benchmarks/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache data/reports data/warehouse.duckdb

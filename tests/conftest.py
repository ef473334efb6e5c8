"""The worlds every test directory shares (one conftest for the whole suite).

- Retries run instantly (`stamina.set_testing`, once, for every test); the client's own
  `max_attempts` still bounds them.
- Sheets: `write_csv` / `write_xlsx` write a clean distribution sheet (or the rows a test gives).
- Submission: `world` is a seeded in-process sandbox and a data directory with an inbox.
- Warehouse: `warehouse` (empty, migrated), `known_warehouse` / `known_result` (the known world
  of `worlds.warehouse`), `service` (an in-process sandbox and settings pointing at it).

Every collected test must run: items get node ids of their own, and a session in which fewer
tests ran than were collected fails (`EveryTestRuns`).

Every `Settings` built here passes `_env_file=None`: a developer's `.env` never leaks into a test.
Every test runs in a folder of its own (its working directory, so the default `data/` is its own,
never the checkout's after `make run`) with no `FUNDPIPE_*` or `PREFECT_*` variable inherited
from the shell or from an earlier test (`_own_folder_and_environment`), and the session's own
cache folder (`FUNDPIPE_CACHE_DIR`).
Helpers the tests import live in the `worlds` package beside this file.

No test keeps a date: every test's clock starts at `WORLD_START`, a fixed instant, and ticks
from there (`_world_clock`, time-machine). The pipeline's "now", the in-process sandbox's base
time and anything else that asks Python for the time read it; a test that wants another instant
travels there itself (the `time_machine` fixture) or passes its own `clock=`. Only the
end-to-end tests, whose Prefect servers are other processes, read the real time. `make test` runs the suite a year ahead and a
year back under Debian's faketime to keep it so (`tests/run_any_day.sh`).
"""

from __future__ import annotations

import datetime as dt
import os
import select
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import stamina
import time_machine
import xlsxwriter

from fundpipe.config import Settings
from fundpipe.reconcile import ReconcileResult, reconcile
from fundpipe.sandbox import SandboxConfig, create_app
from fundpipe.warehouse.file import Warehouse
from worlds.sheets import HEADER, clean_rows, csv_bytes
from worlds.submit import World
from worlds.warehouse import seed_known_world


def _sleep_on_a_relative_timeout(seconds: float) -> None:
    """`time.sleep` as a relative wait, for a process whose `time.sleep` fails (below)."""
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        select.select([], [], [], left)


def _survive_libfaketime_s_sleep() -> None:
    """Under libfaketime with `FAKETIME_DONT_FAKE_MONOTONIC=1`, CPython's `time.sleep` (an
    absolute deadline on the monotonic clock) fails with EINVAL, while relative waits (select,
    events, locks, queues) work: this process sleeps on a relative timeout, and the processes it
    starts fake their monotonic clock too, where `time.sleep` works. Without libfaketime, or with
    the monotonic clock faked (as `make any-day` runs), nothing changes."""
    try:
        time.sleep(0.0001)
    except OSError:
        time.sleep = _sleep_on_a_relative_timeout  # type: ignore[assignment]  # floats only
        os.environ.pop("FAKETIME_DONT_FAKE_MONOTONIC", None)


_survive_libfaketime_s_sleep()

KNOWN_AS_OF = dt.date(2026, 11, 30)
BASE = "http://sandbox.test"
#: Where every test's clock starts (it ticks from there): a Saturday morning in New York before
#: the known world's as-of, so the worlds' sheets (paid mid-December) are in the future and the
#: sandbox can be moved forward to any date the tests name.
WORLD_START = dt.datetime(2026, 11, 28, 9, 0, tzinfo=dt.UTC)


#: The environment variables a test never inherits: fundpipe's settings and Prefect's.
HERMETIC_PREFIXES = ("FUNDPIPE_", "PREFECT_")


@pytest.fixture(autouse=True)
def _own_folder_and_environment(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test starts in an empty working directory of its own, with no FUNDPIPE_*/PREFECT_*.

    The settings' default data folder is `data/` under the working directory: after `make run`
    the checkout's `data/orgs/` holds two organizations, which a CLI test must not see.
    """
    for key in list(os.environ):
        if key.startswith(HERMETIC_PREFIXES):
            monkeypatch.delenv(key)
    # The kept empty warehouse (`fundpipe.warehouse.template`) is the session's, not the
    # machine's: a test never reads a copy an earlier session or `make run` left in ~/.cache.
    monkeypatch.setenv("FUNDPIPE_CACHE_DIR", str(session_cache(tmp_path_factory)))
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test session's own cache folder (every test's `FUNDPIPE_CACHE_DIR`)."""
    return tmp_path_factory.getbasetemp() / "cache"


@pytest.fixture(scope="module", autouse=True)
def _world_clock(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test module's "now" starts at `WORLD_START` and ticks: no test depends on today's date.

    The clock is the module's, so its module-scoped worlds (a sandbox, a warehouse) and its
    tests share one timeline that only moves forward. Not for the end-to-end tests: their
    Prefect server and workers are other processes, on the real clock, and the deadline alerts
    they prove are read against it.
    """
    if any(request.node.iter_markers("e2e")):
        yield
        return
    with time_machine.travel(WORLD_START, tick=True):
        yield


#: The width the CLI's tables are drawn at in every test (a person's terminal decides it).
CLI_WIDTH = 250


@pytest.fixture(autouse=True)
def _cli_width() -> Iterator[None]:
    """The CLI's consoles draw at `CLI_WIDTH` whatever terminal ran pytest.

    Rich fixes a console's width when it is created with COLUMNS set, and pytest's workers
    inherit COLUMNS=80 from the terminal or CI: a table cell's words would then wrap onto two
    lines and a test reading them would depend on who ran it. Put back exactly what was there.
    """
    common = sys.modules.get("fundpipe.app.cli.common")
    if common is None:  # a test that runs no command
        yield
        return
    consoles = (common.console, common.err_console)
    was = [c._width for c in consoles]
    for c in consoles:
        c.width = CLI_WIDTH
    try:
        yield
    finally:
        for c, width in zip(consoles, was, strict=True):
            c._width = width


@pytest.fixture(autouse=True)
def _no_retry_sleeps() -> Iterator[None]:
    """Retries run instantly; the client's own max_attempts still bounds them."""
    with stamina.set_testing(True, attempts=100, cap=True):
        yield


# --------------------------------------------------------------------------- sheets


@pytest.fixture
def write_csv(tmp_path: Path) -> Callable[..., Path]:
    """Write rows as a CSV file (text, encoding and delimiter chosen by the test)."""

    def write(
        rows: list[list[str]] | None = None,
        *,
        name: str = "sheet.csv",
        header: list[str] = HEADER,
        encoding: str = "utf-8",
        delimiter: str = ",",
    ) -> Path:
        path = tmp_path / name
        text = csv_bytes(clean_rows() if rows is None else rows, header=header, delimiter=delimiter)
        path.write_bytes(text.encode(encoding))
        return path

    return write


@pytest.fixture
def write_xlsx(tmp_path: Path) -> Callable[..., Path]:
    """Write cells (any Python values; callables get the worksheet) to an XLSX with xlsxwriter."""

    def write(
        rows: list[list[object]] | None = None,
        *,
        name: str = "sheet.xlsx",
        header: list[str] = HEADER,
        sheet: str = "Distributions",
    ) -> Path:
        path = tmp_path / name
        workbook = xlsxwriter.Workbook(str(path))
        ws = workbook.add_worksheet(sheet)
        date_format = workbook.add_format({"num_format": "yyyy-mm-dd hh:mm"})
        ws.write_row(0, 0, header)
        for r, row in enumerate(clean_rows() if rows is None else rows, start=1):
            for c, value in enumerate(row):
                if callable(value):
                    value(ws, r, c, date_format)
                elif value is not None:
                    ws.write(r, c, value)
        workbook.close()
        return path

    return write


# --------------------------------------------------------------------------- submission


@pytest.fixture
def world(tmp_path: Path) -> World:
    """A seeded in-process sandbox and a data directory with an empty inbox."""
    app = create_app(SandboxConfig(rate_limit_requests=10_000, rate_limit_window_s=1))
    settings = Settings(
        _env_file=None,
        local={"data_dir": tmp_path / "data"},
        http={"rate_limit_per_s": 1000.0, "max_attempts": 6},
    ).with_service(BASE)
    (tmp_path / "data" / "inbox").mkdir(parents=True)
    return World(settings=settings, transport=httpx.ASGITransport(app=app))


# --------------------------------------------------------------------------- warehouse


@pytest.fixture
def warehouse(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    """An empty, migrated warehouse in a temporary directory: a copy of the session's kept
    empty warehouse (`fundpipe.warehouse.template`; building one runs every view, seconds)."""
    wh = Warehouse(
        tmp_path / "warehouse.duckdb", lock_timeout_s=5, cache_dir=session_cache(tmp_path_factory)
    )
    wh.migrate()
    return wh


@pytest.fixture
def known_warehouse(warehouse: Warehouse) -> Warehouse:
    """The warehouse holding `worlds.warehouse.seed_known_world`."""
    with warehouse.write() as con:
        seed_known_world(con)
    return warehouse


@pytest.fixture
def settings(tmp_path: Path, warehouse: Warehouse) -> Settings:
    """Settings whose data directory and warehouse are temporary."""
    return Settings(
        _env_file=None, local={"data_dir": tmp_path / "data", "warehouse_path": warehouse.path}
    )  # type: ignore[call-arg]


@pytest.fixture(scope="module")
def known_result(tmp_path_factory: pytest.TempPathFactory) -> ReconcileResult:
    """`reconcile()` of the known world as of 2026-11-30 (shared by a module's read-only tests)."""
    root = tmp_path_factory.mktemp("known")
    wh = Warehouse(root / "warehouse.duckdb", cache_dir=session_cache(tmp_path_factory))
    with wh.write() as con:
        seed_known_world(con)
    settings = Settings(
        _env_file=None, local={"data_dir": root / "data", "warehouse_path": wh.path}
    )  # type: ignore[call-arg]
    return reconcile(settings, as_of=KNOWN_AS_OF, out_dir=root / "out")


@pytest.fixture
def service(tmp_path: Path) -> tuple[httpx.ASGITransport, Settings]:
    """An empty-ish sandbox (demo seed) reachable in-process, and settings pointing at it."""
    transport = httpx.ASGITransport(
        app=create_app(SandboxConfig(seed="demo", rate_limit_requests=100_000))
    )
    settings = Settings(
        _env_file=None, local={"data_dir": tmp_path / "data"}, http={"rate_limit_per_s": 10_000}
    ).with_service(BASE)
    return transport, settings


# --- every collected test runs -------------------------------------------------------------


class EveryTestRuns:
    """Compares the tests collected with the tests that ran (on the xdist controller too)."""

    def __init__(self) -> None:
        """Nothing collected or run yet."""
        self.collected: list[str] | None = None
        self.ran = 0

    def _record_collection(self, ids: list[str]) -> None:
        if self.collected is None:
            self.collected = list(ids)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Without xdist: the selected items."""
        if not session.config.pluginmanager.hasplugin("dsession"):
            self._record_collection([item.nodeid for item in session.items])

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """With xdist: what a worker collected (every worker collects the same items)."""
        self._record_collection(ids)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """One outcome per test: its call, or its setup when that failed or skipped."""
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.ran += 1

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Fail a session that would otherwise pass while some collected test never ran."""
        config = session.config
        if self.collected is None or config.option.collectonly or exitstatus != 0:
            return
        if config.option.maxfail or session.shouldstop:
            return
        duplicates = [nodeid for nodeid, n in Counter(self.collected).items() if n > 1]
        problems = []
        if duplicates:
            problems.append(
                f"{len(duplicates)} node id(s) shared by several items: {duplicates[:3]}"
            )
        if self.ran != len(self.collected):
            problems.append(f"{len(self.collected)} tests collected but {self.ran} ran")
        if problems:
            reporter = config.pluginmanager.get_plugin("terminalreporter")
            for problem in problems:
                if reporter is not None:
                    reporter.write_line(
                        f"ERROR: every collected test must run: {problem}", red=True
                    )
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give every item a node id of its own; put the files of slow tests first.

    schemathesis 4 on pytest 9 names its items `test[GET /v1/…]` but leaves every one with the
    bare function's node id; xdist then schedules only one of them. The node id is the parent's
    plus the item's name, as pytest builds it for its own parametrized items.
    """
    from _pytest.nodes import coerce_node_id  # pytest 9's node ids; no public setter

    for item in items:
        if isinstance(item, pytest.Function) and not item.nodeid.endswith(item.name):
            parent, _, _ = item.nodeid.rpartition("::")
            item._id = coerce_node_id(f"{parent}::{item.name}")
    # the order `make test` hands files to its two workers in: the files of `slow` tests first,
    # then the files with more tests: a long file handed out last would leave the other worker
    # idle until it ends (xdist's own reordering, by tests per file alone, put them last)
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    tests = Counter(item.path for item in items)
    items.sort(key=lambda item: (item.path not in slow, -tests[item.path]))


def pytest_configure(config: pytest.Config) -> None:
    """Install the check on the controller (xdist workers only report to it)."""
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(EveryTestRuns(), "every-test-runs")

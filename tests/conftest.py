"""The worlds every test directory shares (one conftest for the whole suite).

- Retries run instantly (`stamina.set_testing`, once, for every test); the client's own
  `max_attempts` still bounds them.
- Sheets: `write_csv` / `write_xlsx` write a clean distribution sheet (or the rows a test gives).
- Submission: `world` is a seeded in-process sandbox and a data directory with an inbox.
- Warehouse: `warehouse` (empty, migrated), `known_warehouse` / `known_result` (the known world
  of `worlds.warehouse`), `service` (an in-process sandbox and settings pointing at it).

Every `Settings` built here passes `_env_file=None`: a developer's `.env` never leaks into a test.
Helpers the tests import live in the `worlds` package beside this file.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import stamina
import xlsxwriter

from fundpipe.config import Settings
from fundpipe.reconcile.views import ReconcileResult, reconcile
from fundpipe.sandbox import SandboxConfig, create_app
from fundpipe.warehouse.file import Warehouse
from worlds.sheets import HEADER, clean_rows, csv_bytes
from worlds.submit import World
from worlds.warehouse import seed_known_world

KNOWN_AS_OF = dt.date(2026, 11, 30)
BASE = "http://sandbox.test"


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
        data_dir=tmp_path / "data",
        rate_limit_per_s=1000.0,
        max_attempts=6,
        _env_file=None,  # type: ignore[call-arg]
    ).with_service(BASE)
    (tmp_path / "data" / "inbox").mkdir(parents=True)
    return World(settings=settings, transport=httpx.ASGITransport(app=app))


# --------------------------------------------------------------------------- warehouse


@pytest.fixture
def warehouse(tmp_path: Path) -> Warehouse:
    """An empty, migrated warehouse in a temporary directory."""
    wh = Warehouse(tmp_path / "warehouse.duckdb", lock_timeout_s=5)
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
    return Settings(data_dir=tmp_path / "data", warehouse_path=warehouse.path, _env_file=None)  # type: ignore[call-arg]


@pytest.fixture(scope="module")
def known_result(tmp_path_factory: pytest.TempPathFactory) -> ReconcileResult:
    """`reconcile()` of the known world as of 2026-11-30 (shared by a module's read-only tests)."""
    root = tmp_path_factory.mktemp("known")
    wh = Warehouse(root / "warehouse.duckdb")
    with wh.write() as con:
        seed_known_world(con)
    settings = Settings(data_dir=root / "data", warehouse_path=wh.path, _env_file=None)  # type: ignore[call-arg]
    return reconcile(settings, as_of=KNOWN_AS_OF, out_dir=root / "out")


@pytest.fixture
def service(tmp_path: Path) -> tuple[httpx.ASGITransport, Settings]:
    """An empty-ish sandbox (demo seed) reachable in-process, and settings pointing at it."""
    transport = httpx.ASGITransport(
        app=create_app(SandboxConfig(seed="demo", rate_limit_requests=100_000))
    )
    settings = Settings(
        data_dir=tmp_path / "data",
        rate_limit_per_s=10_000,
        _env_file=None,  # type: ignore[call-arg]
    ).with_service(BASE)
    return transport, settings

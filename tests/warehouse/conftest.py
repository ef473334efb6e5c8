"""Fixtures for the warehouse, reconciliation and report tests: real temporary DuckDB files."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import httpx
import pytest
from warehouse_world import seed_known_world

from fundpipe.config import Settings
from fundpipe.reconcile.views import ReconcileResult, reconcile
from fundpipe.sandbox import SandboxConfig, create_app
from fundpipe.warehouse.file import Warehouse

KNOWN_AS_OF = dt.date(2026, 11, 30)


@pytest.fixture
def warehouse(tmp_path: Path) -> Warehouse:
    """An empty, migrated warehouse in a temporary directory."""
    wh = Warehouse(tmp_path / "warehouse.duckdb", lock_timeout_s=5)
    wh.migrate()
    return wh


@pytest.fixture
def known_warehouse(warehouse: Warehouse) -> Warehouse:
    """The warehouse holding `warehouse_world.seed_known_world`."""
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


BASE = "http://sandbox.test"


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

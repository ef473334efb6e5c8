"""Reconciliation without the sandbox-only payment fields (`disbursed_at`, `failed_at`,
`failure_reason`): they enrich the reports when present and never decide."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import openpyxl

from fundpipe.config import Settings
from fundpipe.reconcile import reconcile
from fundpipe.warehouse.file import Warehouse
from worlds.warehouse import seed_known_world

AS_OF = dt.date(2026, 11, 30)


def _without_our_fields(warehouse: Warehouse) -> None:
    with warehouse.write() as con:
        seed_known_world(con)
        con.execute(
            "UPDATE distribution_payments SET failure_reason = NULL, failed_at = NULL, "
            "disbursed_at = NULL"
        )


def test_a_failed_payment_without_a_reason_is_still_an_exception(
    warehouse: Warehouse, settings: Settings, tmp_path: Path
) -> None:
    _without_our_fields(warehouse)
    result = reconcile(settings, as_of=AS_OF, out_dir=tmp_path / "out")
    exceptions = result.frame("exceptions").set_index("object_id")
    reason = exceptions.loc["dpmt_5", "reason"]
    assert exceptions.loc["dpmt_5", "kind"] == "status_mismatch"
    assert "reason not given by the service" in reason
    book = openpyxl.load_workbook(result.workbook, read_only=True)
    cells = [c for row in book["Exceptions"].iter_rows(values_only=True) for c in row]
    assert any(isinstance(c, str) and "reason not given by the service" in c for c in cells)


def test_a_failed_payment_with_a_reason_says_it(known_warehouse: Warehouse, tmp_path: Path) -> None:
    settings = Settings(
        _env_file=None,
        local={"data_dir": tmp_path / "data", "warehouse_path": known_warehouse.path},
    )  # type: ignore[call-arg]
    result = reconcile(settings, as_of=AS_OF, out_dir=tmp_path / "out")
    reason = result.frame("exceptions").set_index("object_id").loc["dpmt_5", "reason"]
    assert "insufficient funds" in reason
    assert "not given" not in reason

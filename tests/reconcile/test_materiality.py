"""Materiality (issue 29): an organization's threshold below which an unexplained difference is
listed on the Roll-forward but opens no exception; the Summary states it. Set in dollars."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import openpyxl
import pytest
from pydantic import ValidationError

from fundpipe.config import Settings
from fundpipe.errors import ConfigurationError
from fundpipe.orgs import parse_orgs
from fundpipe.reconcile import reconcile
from fundpipe.warehouse.file import Warehouse

AS_OF = dt.date(2026, 11, 30)  # fa_bdep: a $10.00 debit nobody explained


def _summary(path: Path) -> dict[str, object]:
    ws = openpyxl.load_workbook(path, read_only=True)["Summary"]
    return {r[0]: r[1] for r in ws.iter_rows(max_col=2, values_only=True) if r[0]}


@pytest.mark.parametrize(
    ("materiality", "exception"), [("10.01", False), ("$10.00", True), ("0", True)]
)
def test_an_item_below_materiality_is_listed_but_opens_no_exception(
    settings: Settings,
    known_warehouse: Warehouse,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    materiality: str,
    exception: bool,
) -> None:
    monkeypatch.setenv("FUNDPIPE_MATERIALITY", materiality)
    configured = Settings(
        local={"data_dir": settings.local.data_dir, "warehouse_path": known_warehouse.path}
    )
    result = reconcile(configured, as_of=AS_OF, out_dir=tmp_path / "r")

    roll = result.frame("rollforward").set_index("financial_account").loc["fa_bdep"]
    assert roll.unexplained_cents == -1_000  # listed, whatever the threshold
    exceptions = result.frame("exceptions")
    items = exceptions[exceptions.kind == "unexplained_balance"]
    assert (not items.empty) == exception
    assert result.summary.reconciling_items == 1
    assert result.lifecycle is not None
    opened = {t.kind for t in result.lifecycle.opened}
    assert ("unexplained_balance" in opened) == exception
    stated = str(_summary(result.workbook)["Materiality"])
    if materiality == "0":
        assert stated.startswith("$0.00: every reconciling item is an exception")
    else:
        assert stated.startswith(f"${float(materiality.strip('$')):,.2f}: a reconciling item")


def test_materiality_is_dollars_from_the_settings_or_the_organization(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FUNDPIPE_MATERIALITY", "1,000.50")
    settings = Settings(_env_file=None, local={"data_dir": tmp_path})  # type: ignore[call-arg]
    assert settings.pipeline.materiality == 100_050
    (org,) = parse_orgs('[{"id": "org_a", "name": "Acme Fund", "materiality": "250"}]')
    mine = settings.for_org(org, several=False)
    assert (mine.pipeline.materiality, mine.service.org_name) == (25_000, "Acme Fund")
    for bad in ("-5", "1.234", "ten"):
        monkeypatch.setenv("FUNDPIPE_MATERIALITY", bad)
        with pytest.raises(ValidationError, match="expected dollars"):
            Settings(_env_file=None, local={"data_dir": tmp_path})  # type: ignore[call-arg]
    with pytest.raises(ConfigurationError, match=r"org_a\): materiality: expected dollars"):
        parse_orgs('[{"id": "org_a", "materiality": "-1"}]')

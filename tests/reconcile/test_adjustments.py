"""A late change to a closed month's payment (issue 29): one exception — the after-close
adjustment — which stays open until a person acknowledges it (a new month does not clear it),
and which the payment's other symptoms point to instead of opening their own: its amount
difference, its distribution not tying out, the closed month's reconciling item."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import openpyxl
import pytest

from fundpipe.reconcile import ReconcileResult, reconcile
from fundpipe.reconcile.close import close_period
from fundpipe.reconcile.lifecycle import acknowledge
from fundpipe.submit.ingest import ingest
from fundpipe.sync.pull import sync
from fundpipe.warehouse.file import Warehouse
from worlds.submit import World, write_sheet
from worlds.summary import assert_summary_is_its_tabs

#: Among the longest files: `make test` hands them out first (tests/conftest.py).
pytestmark = pytest.mark.slow

LATE = 25_000  # $250.00


def _night(world: World, at: dt.datetime) -> ReconcileResult:
    world.control("POST", "clock/set", {"now": at.isoformat()})
    now = dt.datetime.fromisoformat(world.control("GET", "clock")["now"])
    sync(world.settings, transport=world.transport, clock=lambda: now)
    return reconcile(world.settings, clock=lambda: now)


def _kinds(result: ReconcileResult) -> list[tuple[str, str]]:
    exceptions = result.frame("exceptions")
    return sorted(zip(exceptions.kind, exceptions.state, strict=True))


def test_a_late_change_is_one_exception_open_until_a_person_acknowledges_it(
    world: World, tmp_path: Path
) -> None:
    world.control("POST", "clock/set", {"now": "2026-12-01T12:00:00+00:00"})
    sheet = tmp_path / "dec.csv"
    write_sheet(sheet, [("D1", "veh_demo1", [100_000, 200_000])], date="2026-12-20 09:00")
    (world.inbox / "dec.csv").write_bytes(sheet.read_bytes())
    ingest(world.settings, transport=world.transport, settle_s=0)
    _night(world, dt.datetime(2026, 12, 21, 12, tzinfo=dt.UTC))  # both payments disbursed
    january = dt.datetime(2027, 1, 2, 12, tzinfo=dt.UTC)
    assert _kinds(_night(world, january)) == []
    close_period(world.settings, "2026-12", prepared_by="ana", clock=lambda: january)

    # on 3 January a December payment is $250 larger at the service
    payment = next(
        p
        for d, ps in world.distributions()
        for p in ps
        if d.external_reference == "D1" and p.amount == 100_000
    )
    world.control("PATCH", f"distribution_payments/{payment.id}", {"amount": 100_000 + LATE})
    learned = _night(world, dt.datetime(2027, 1, 3, 12, tzinfo=dt.UTC))
    assert _kinds(learned) == [("after_close_adjustment", "open")]
    (adjustment,) = learned.frame("exceptions").itertuples()
    assert (adjustment.object_id, adjustment.amount_cents) == (payment.id, LATE)
    assert "Payments, Tie-out and Roll-forward" in adjustment.action
    # its symptoms are still on their sheets, pointing to it rather than opening their own
    payments = learned.frame("sheet_vs_service").set_index("payment_id")
    assert payments.loc[payment.id].match == "amount_mismatch"
    tie_out = learned.frame("distribution_tieout")
    assert not tie_out[tie_out.distribution_external_reference == "D1"].ties.iloc[0]
    roll = learned.frame("rollforward").set_index("financial_account").loc["fa_demo1dep"]
    assert roll.carried_cents == LATE
    assert learned.summary.exceptions == 1
    kinds = openpyxl.load_workbook(learned.workbook, read_only=True)["Exceptions"]
    assert kinds["H2"].value == "After-close adjustment (closed month changed)"  # in words
    assert_summary_is_its_tabs(learned)

    # a new month does not clear it: nobody has acknowledged it
    february = _night(world, dt.datetime(2027, 2, 2, 12, tzinfo=dt.UTC))
    assert _kinds(february) == [("after_close_adjustment", "open")]
    assert february.lifecycle is not None
    assert not february.lifecycle.resolved
    assert [t.id for t in february.lifecycle.still_open] == [adjustment.exception_id]

    # a person records it: acknowledged, and its symptoms stay explained by it
    wh = Warehouse(world.settings.local.warehouse_file)
    acknowledge(
        wh,
        adjustment.exception_id,
        note="recorded in January",
        by="ana",
        now=dt.datetime(2027, 2, 2, 13, tzinfo=dt.UTC),
    )
    later = _night(world, dt.datetime(2027, 2, 3, 12, tzinfo=dt.UTC))
    assert _kinds(later) == [("after_close_adjustment", "acknowledged")]
    assert later.summary.open_exceptions == 0

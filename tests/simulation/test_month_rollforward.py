"""Sixteen simulated days across a month end (issue 22): the roll-forward and the tie-out stay true.

The sandbox's clock starts on 2026-11-20 (an injected base clock, so the test means the same on
any day it runs). Sheets pay veh_demo1 in November and veh_demo2 in December; one payment fails
at the service; on 11-28 a $10,000 credit nobody can explain lands on veh_demo2's depository
account; on 12-05 a person acknowledges it. The test keeps its own ground truth — the sheets it
dropped and the service's payments as the client lists them, the credit it injected — and after
every day's sync and reconciliation checks:

- every account's roll-forward foots (opening + movements = expected closing; service total −
  expected closing = the reported unexplained), and the unexplained is exactly the injected
  credit on veh_demo2's depository account in November, nothing anywhere else;
- in December the November credit — already inside the service's opening balance — is still a
  reconciling item, same id, carried, until the day after it is acknowledged;
- each distribution's tie-out equals the test's own sheet and service figures, and the Total
  row foots and cross-foots.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from fundpipe.reconcile import ReconcileResult, reconcile
from fundpipe.reconcile.lifecycle import acknowledge
from fundpipe.submit.ingest import ingest
from fundpipe.sync.pull import sync
from fundpipe.warehouse.file import Warehouse
from worlds.submit import World, sandbox_world, write_sheet
from worlds.summary import assert_summary_is_its_tabs

#: Among the longest files: `make test` hands them out first (tests/conftest.py).
pytestmark = pytest.mark.slow

BASE = dt.datetime(2026, 11, 20, 12, tzinfo=dt.UTC)
CREDIT = 1_000_000  # $10,000.00
ACCOUNT = "fa_demo2dep"
FINAL = ("disbursed", "failed", "cancelled")
PARTS = ("opening", "disbursed", "returned", "credits", "other", "market_movement")


class Books:
    """The test's own truth: what the sheets said, per distribution reference."""

    def __init__(self, world: World, tmp: Path) -> None:
        self.world = world
        self.tmp = tmp
        self.sheets: dict[str, list[int]] = {}

    def drop(self, name: str, distributions: list[tuple[str, str, list[int]]], date: str) -> None:
        staged = self.tmp / name
        self.sheets.update(write_sheet(staged, distributions, date=date))
        (self.world.inbox / name).write_bytes(staged.read_bytes())
        result = ingest(self.world.settings, transport=self.world.transport, settle_s=0)
        assert str(result.files[0].state) == "processed", name

    def tie_out(self, as_of: dt.date) -> dict[str, dict[str, int]]:
        """Per reference: the tie-out columns as the test computes them from its own truth."""
        out: dict[str, dict[str, int]] = {}
        for d, payments in self.world.distributions():
            sheet = self.sheets[d.external_reference]
            row = {
                "sheet_payments": len(sheet),
                "sheet_cents": sum(sheet),
                "service_payments": len(payments),
                "service_cents": sum(p.amount for p in payments),
            }
            for status in ("disbursed", "failed", "cancelled"):
                mine = [p.amount for p in payments if p.status == status]
                row[f"{status}_payments"], row[f"{status}_cents"] = len(mine), sum(mine)
            open_ = [p.amount for p in payments if p.status not in FINAL]
            row["outstanding_payments"], row["outstanding_cents"] = len(open_), sum(open_)
            out[d.external_reference] = row
        return out


def _check_rollforward(result: ReconcileResult, day: dt.date) -> dict[str, Any]:
    frame = result.frame("rollforward")
    assert len(frame), day
    for r in frame.itertuples():
        expected = sum(int(getattr(r, f"{p}_cents")) for p in PARTS)
        assert expected == r.expected_closing_cents, (day, r.financial_account)
        assert r.service_total_cents - expected == r.unexplained_cents, (day, r.financial_account)
        assert r.period == f"{day:%Y-%m}", (day, r.financial_account)
        if r.type == "brokerage":
            assert r.unexplained_cents == 0, (day, r.financial_account)
    # the Roll-forward detail's rows per distribution foot to each account's disbursed/returned
    movements = result.frame("rollforward_movements")
    sums = movements.groupby(["financial_account", "kind"])["amount_cents"].sum().to_dict()
    for r in frame.itertuples():
        assert sums.get((r.financial_account, "disbursed"), 0) == r.disbursed_cents, day
        assert sums.get((r.financial_account, "returned"), 0) == r.returned_cents, day
    mine = frame.set_index("financial_account").loc[ACCOUNT].to_dict()
    others = frame[frame.financial_account != ACCOUNT]
    assert (others.unexplained_cents == 0).all(), day
    assert (others.carried_cents == 0).all(), day
    return mine  # type: ignore[no-any-return]


def _check_tie_out(result: ReconcileResult, truth: dict[str, dict[str, int]]) -> None:
    frame = result.frame("distribution_tieout")
    rows = frame[~frame.is_total]
    (total,) = frame[frame.is_total].to_dict("records")
    got = {
        str(r["distribution_external_reference"]): {k: int(r[k]) for k in truth[next(iter(truth))]}
        for r in rows.to_dict("records")
    }
    assert got == truth
    columns = list(next(iter(truth.values())))
    for column in columns:  # the Total row foots
        assert total[column] == sum(t[column] for t in truth.values()), column
    for r in [*rows.to_dict("records"), total]:  # and every row cross-foots
        parts = ("disbursed", "failed", "cancelled", "outstanding")
        assert sum(r[f"{p}_cents"] for p in parts) == r["service_cents"]
        assert sum(r[f"{p}_payments"] for p in parts) == r["service_payments"]
        assert bool(r["ties"]) == (
            r["sheet_cents"] == r["service_cents"] and r["sheet_payments"] == r["service_payments"]
        )


def test_a_credit_found_in_november_is_carried_into_december_until_acknowledged(
    tmp_path: Path,
) -> None:
    world = sandbox_world(tmp_path / "data", clock=lambda: BASE)
    books = Books(world, tmp_path)
    wh = Warehouse(world.settings.local.warehouse_file)
    item: str | None = None
    acked_on: dt.date | None = None

    def inject_credit() -> None:
        balance = world.control("PATCH", f"financial_accounts/{ACCOUNT}", {})["balance"]
        world.control(
            "PATCH",
            f"financial_accounts/{ACCOUNT}",
            {"total": balance["total"] + CREDIT, "available": balance["available"] + CREDIT},
        )

    for day in range(1, 17):
        world.control("POST", "clock/advance", {"seconds": 86_400})
        now = dt.datetime.fromisoformat(world.control("GET", "clock")["now"])
        today = now.date()
        if day == 1:  # 11-21: veh_demo1 pays on 11-25, veh_demo2 on 12-03
            books.drop(
                "A.csv", [("A1", "veh_demo1", [100_000, 200_000, 300_000])], "2026-11-25 09:00"
            )
            books.drop("B.csv", [("B1", "veh_demo2", [50_000, 60_000])], "2026-12-03 09:00")
        if day == 3:  # one of B1's payments fails at the service before its date
            failed = next(
                p
                for d, ps in world.distributions()
                if d.external_reference == "B1"
                for p in ps
                if p.amount == 60_000
            )
            world.control("PATCH", f"distribution_payments/{failed.id}", {"status": "failed"})
        if day == 8:  # 11-28: a credit no payment explains
            inject_credit()
        sync(world.settings, transport=world.transport, clock=lambda now=now: now)
        result = reconcile(
            world.settings,
            as_of=today,
            out_dir=tmp_path / "reports" / str(day),
            clock=lambda now=now: now,
        )

        mine = _check_rollforward(result, today)
        exceptions = result.frame("exceptions")
        items = exceptions[exceptions.kind == "unexplained_balance"]
        if today < dt.date(2026, 11, 28):
            assert mine["unexplained_cents"] == 0, today
            assert items.empty, today
        elif today.month == 11:  # the credit: a reconciling item of November, one id
            assert mine["unexplained_cents"] == CREDIT, today
            assert mine["carried_cents"] == 0, today
            assert list(items.object_id) == [ACCOUNT], today
            item = item or str(mine["reconciling_item_id"])
            assert list(items.exception_id) == [item], today
        elif acked_on is None:
            # December: the opening balance (end of November at the service) holds the credit,
            # so December alone shows nothing unexplained — and November's item is carried
            assert (
                mine["opening_cents"]
                == mine["service_total_cents"] - mine["disbursed_cents"] - mine["returned_cents"]
            ), today
            assert mine["unexplained_cents"] == 0, today
            assert (mine["carried_items"], mine["carried_cents"]) == (1, CREDIT), today
            assert item is not None
            assert item in str(mine["carried_item_ids"]), today
            assert list(items.exception_id) == [item], today
            assert "carried from 2026-11" in items.what.iloc[0], today
            assert list(items.state) == ["open"], today
        else:  # acknowledged: explained, no longer carried, resolved on the next run
            assert (mine["carried_items"], mine["carried_cents"]) == (0, 0), today
            assert items.empty, today
            assert result.lifecycle is not None
            if today == acked_on + dt.timedelta(days=1):
                assert [t.id for t in result.lifecycle.resolved] == [item], today
            # in its month it is now an acknowledged credit: explained, not unexplained
            assert mine["unexplained_cents"] == 0, today

        if day == 15:  # 12-05, after the run: a person finds it on the bank statement
            assert item is not None
            acknowledge(wh, item, note="capital call received early", by="ana", now=now)
            acked_on = today

        _check_tie_out(result, books.tie_out(today))
        assert_summary_is_its_tabs(result)
        if today == dt.date(2026, 12, 4):  # B1's other payment went out on 12-03
            b1 = (
                result.frame("distribution_tieout")
                .set_index("distribution_external_reference")
                .loc["B1"]
            )
            assert (b1.disbursed_cents, b1.failed_cents, b1.outstanding_cents) == (
                50_000,
                60_000,
                0,
            )

    # veh_demo1's November disbursements are movements of its depository account in November
    periods = pd.DataFrame()
    with wh.read() as con:
        con.execute("SET VARIABLE as_of = DATE '2026-12-06'")
        periods = con.sql(
            "SELECT period, disbursed_cents, disbursed_distributions, credits_cents, unexplained_cents "
            "FROM rollforward_periods WHERE financial_account IN ('fa_demo1dep', 'fa_demo2dep') "
            "ORDER BY financial_account, period"
        ).df()
    assert periods.values.tolist() == [
        ["2026-11", -600_000, 1, 0, 0],
        ["2026-12", 0, 0, 0, 0],
        ["2026-11", 0, 0, CREDIT, 0],  # the acknowledged credit, explained in its month
        ["2026-12", -50_000, 1, 0, 0],
    ]

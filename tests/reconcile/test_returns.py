"""A payment that fails after it was disbursed (issue 29): the money came back, so the
roll-forward shows it as Returned — explained by that payment — and the payment is one
exception, not a second "unexplained balance" beside it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from fundpipe.reconcile import reconcile
from fundpipe.submit.ingest import ingest
from fundpipe.sync.pull import sync
from worlds.submit import sandbox_world, write_sheet
from worlds.summary import assert_summary_is_its_tabs

BASE = dt.datetime(2026, 12, 1, 12, tzinfo=dt.UTC)
RETURNED = 875_025  # $8,750.25
ACCOUNT = "fa_demo1dep"


def test_a_payment_returned_after_disbursal_is_a_return_and_one_exception(
    tmp_path: Path,
) -> None:
    world = sandbox_world(tmp_path / "data", clock=lambda: BASE)
    write_sheet(
        tmp_path / "R.csv", [("R1", "veh_demo1", [RETURNED, 100_000])], date="2026-12-02 09:00"
    )
    (world.inbox / "R.csv").write_bytes((tmp_path / "R.csv").read_bytes())
    assert str(ingest(world.settings, transport=world.transport, settle_s=0).files[0].state) == (
        "processed"
    )

    def day(n: int) -> dt.datetime:
        world.control("POST", "clock/advance", {"seconds": 86_400})
        now = dt.datetime.fromisoformat(world.control("GET", "clock")["now"])
        sync(world.settings, transport=world.transport, clock=lambda: now)
        return now

    day(1)
    day(2)  # 12-03: both payments disbursed
    (payment,) = [p for _, ps in world.distributions() for p in ps if p.amount == RETURNED]
    assert payment.status == "disbursed"
    # the bank sends it back: failed at the service (which gives no failure time), credited back
    world.control("PATCH", f"distribution_payments/{payment.id}", {"status": "failed"})
    balance = world.control("PATCH", f"financial_accounts/{ACCOUNT}", {})["balance"]
    world.control(
        "PATCH",
        f"financial_accounts/{ACCOUNT}",
        {"total": balance["total"] + RETURNED, "available": balance["available"] + RETURNED},
    )
    now = day(3)
    result = reconcile(
        world.settings, as_of=now.date(), out_dir=tmp_path / "reports", clock=lambda: now
    )

    row = result.frame("rollforward").set_index("financial_account").loc[ACCOUNT]
    assert row.disbursed_cents == -(RETURNED + 100_000)
    assert row.returned_cents == RETURNED
    assert row.unexplained_cents == 0
    assert row.expected_closing_cents == row.service_total_cents
    movements = result.frame("rollforward_movements")
    returned = movements[(movements.financial_account == ACCOUNT) & (movements.kind == "returned")]
    assert list(
        zip(returned.distribution_external_reference, returned.amount_cents, strict=True)
    ) == [("R1", RETURNED)]
    exceptions = result.frame("exceptions")
    assert "unexplained_balance" not in set(exceptions.kind)
    about = exceptions[exceptions.object_id == payment.id]
    assert len(about) == 1, exceptions[["kind", "object_id", "what"]].to_string()
    assert len(exceptions) == 1, exceptions[["kind", "object_id", "what"]].to_string()
    assert result.summary.unexplained_cents == 0
    assert_summary_is_its_tabs(result)

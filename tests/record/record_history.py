"""A short history of one organization kept in its durable record: a few nights, acknowledgements,
an assignment, a month closed and reviewed — and what a person would compare after a restore."""

from __future__ import annotations

import datetime as dt
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from fundpipe.config import Organization, Settings
from fundpipe.reconcile import ReconcileResult, reconcile
from fundpipe.reconcile.close import close_period, review_period
from fundpipe.reconcile.lifecycle import acknowledge, assign, history, list_exceptions
from fundpipe.reconcile.periods import period_state
from fundpipe.record import decision_sink, take_snapshot
from fundpipe.submit.ingest import ingest
from fundpipe.sync.pull import sync
from fundpipe.warehouse.file import Warehouse
from worlds.submit import World, write_sheet

#: The views every past as-of is compared on (the Summary's figures come from them).
VIEWS = ("sheet_vs_service", "funding", "exceptions", "balance_movement", "rollforward")
#: When the comparison re-runs the past days: after the whole history.
LATER = dt.datetime(2027, 1, 5, 12, tzinfo=dt.UTC)


def org_settings(world: World, record_url: str) -> Settings:
    """The demo organization's settings as an entry point builds them, its record at
    ``record_url`` (``<record_url>/org_demo``)."""
    top = world.settings.updated(local={"record_url": record_url}, pipeline={"inbox_settle_s": 0})
    return top.for_org(Organization(id="org_demo"), several=False)


@dataclass
class History:
    """What happened, as a person would check it afterwards."""

    settings: Settings
    #: as-of date → the views of the report issued that night (read before any disk is lost)
    issued: dict[dt.date, dict[str, pd.DataFrame]] = field(default_factory=dict)

    def keep(self, result: ReconcileResult) -> None:
        """Keep the views of a night's report."""
        self.issued[result.summary.as_of] = sorted_views(result)


class Nights:
    """The sandbox clock, the night's steps and its snapshot, as the nightly runs them."""

    def __init__(self, world: World, settings: Settings) -> None:
        self.world, self.settings = world, settings

    def now(self) -> dt.datetime:
        return dt.datetime.fromisoformat(self.world.control("GET", "clock")["now"])

    def night(self, at: dt.datetime) -> ReconcileResult:
        if at > self.now():
            self.world.control("POST", "clock/set", {"now": at.isoformat()})
        now = self.now()
        ingest(self.settings, transport=self.world.transport, settle_s=0)
        sync(self.settings, transport=self.world.transport, clock=lambda: now)
        result = reconcile(self.settings, clock=lambda: now)
        take_snapshot(self.settings, as_of=result.summary.as_of)
        return result


def _day(month: int, day: int, hour: int = 12) -> dt.datetime:
    return dt.datetime(2026 if month == 12 else 2027, month, day, hour, tzinfo=dt.UTC)


def run_history(world: World, settings: Settings, tmp_path: Path) -> History:
    """December: two distributions (one short of funds), an acknowledgement, a payment changed
    at the service, an assignment; January: acknowledgements, December closed by ana and
    reviewed by ben. Three nights (1 and 21 December, 2 January), each decision on a day
    without a night, so the report issued on a night's day is that day's as-of. The January
    decisions come after the last snapshot: only their objects in the record carry them."""
    nights = Nights(world, settings)
    done = History(settings)
    record = decision_sink(settings)
    wh = Warehouse(settings.local.warehouse_file)
    world.control("POST", "clock/set", {"now": _day(12, 1).isoformat()})
    inbox = settings.local.data_dir / "inbox"
    inbox.mkdir(parents=True, exist_ok=True)
    write_sheet(
        inbox / "dec.csv",
        [("D1", "veh_demo1", [100_000, 200_000]), ("D2", "veh_demo3", [50_000_000, 30_000_000])],
        date="2026-12-20 09:00",
    )
    done.keep(nights.night(_day(12, 1)))
    short = [e for e in list_exceptions(wh, state="open") if e.kind == "shortfall"]
    assert short, "the history needs an exception to acknowledge"
    acknowledge(
        wh, short[0].id, note="capital call due on the 10th", by="ana", now=_day(12, 2, 9),
        record=record,
    )  # fmt: skip
    payment = next(
        p
        for d, ps in world.distributions()
        for p in ps
        if d.external_reference == "D1" and p.amount == 100_000
    )
    world.control("PATCH", f"distribution_payments/{payment.id}", {"amount": 90_000})
    done.keep(nights.night(_day(12, 21)))
    mismatch = [e for e in list_exceptions(wh, state="open") if e.kind == "amount_mismatch"]
    assert mismatch, "the changed payment is an exception"
    assign(wh, mismatch[0].id, to="carl", by="ana", now=_day(12, 22, 9), record=record)
    done.keep(nights.night(_day(1, 2)))
    for open_one in list_exceptions(wh, state="open"):
        acknowledge(
            wh, open_one.id, note="explained in the December file", by="ana",
            now=_day(1, 3, 9), record=record,
        )  # fmt: skip
    close_period(
        settings, "2026-12", prepared_by="ana", with_open_exceptions=True,
        clock=lambda: _day(1, 3, 10), user="ana",
    )  # fmt: skip
    # two people at two logins: the close's segregation of duties
    review_period(settings, "2026-12", reviewed_by="ben", clock=lambda: _day(1, 3, 11), user="ben")
    return done


def as_of_views(settings: Settings, as_of: dt.date, out: Path) -> dict[str, pd.DataFrame]:
    """The views of a past as-of re-run later (it only reads), sorted for comparison."""
    return sorted_views(reconcile(settings, as_of=as_of, out_dir=out, clock=lambda: LATER))


def sorted_views(result: ReconcileResult) -> dict[str, pd.DataFrame]:
    """A report's views, rows sorted."""
    frames = {}
    for name in VIEWS:
        if name not in result.parquet:
            continue
        frame = result.frame(name)
        frame = frame.sort_values(list(frame.columns)).reset_index(drop=True)
        frames[name] = frame
    return frames


def decisions_seen(settings: Settings) -> dict[str, Any]:
    """Every exception's state, owner and acknowledgement, its person events (without their
    sequence numbers), and the close of December, as `exceptions list/show` and `close list`
    show them."""
    wh = Warehouse(settings.local.warehouse_file)
    states = sorted(
        (
            e.id, e.state, e.owner, e.acknowledged_by, e.note, e.acknowledged_amount_cents,
            e.amount_cents,
        )
        for e in list_exceptions(wh, as_of=LATER.date())
    )  # fmt: skip
    events = {
        e[0]: sorted(
            (ev.event, ev.at, ev.by, ev.note, ev.assignee, ev.amount_cents)
            for ev in history(wh, e[0])[1]
            if ev.by != "fundpipe"
        )
        for e in states
    }
    with wh.read() as con:
        december = period_state(con, "2026-12")
    return {"states": states, "events": events, "december": december}


def wipe(folder: Path) -> None:
    """Delete ``folder`` whole, read-only closed months included (a lost disk)."""
    for root, dirs, _ in os.walk(folder):
        for name in dirs:
            path = Path(root) / name
            path.chmod(path.stat().st_mode | stat.S_IWUSR | stat.S_IXUSR)
    import shutil

    shutil.rmtree(folder)

"""One organization's night is a library call (`fundpipe.night.night`) returning typed data."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import pytest

from fundpipe.errors import ExitCode
from fundpipe.night import STEPS, NightResult, night
from worlds.submit import World, write_sheet

_R = TypeVar("_R")


def test_a_night_ingests_syncs_reconciles_and_reports(world: World) -> None:
    truth = write_sheet(
        world.inbox / "q4.csv", [("A-1", "veh_demo1", [100_00, 250_01]), ("A-2", "veh_demo2", [5])]
    )
    settings = world.settings.updated(pipeline={"inbox_settle_s": 0})
    result = night(settings, transport=world.transport)
    assert isinstance(result, NightResult)
    assert [(f.source_file, f.state) for f in result.files] == [("q4.csv", "processed")]
    assert (result.files_seen, result.files_processed, result.files_rejected) == (1, 1, 0)
    assert result.distributions_created == 2
    assert result.cents_created == sum(sum(v) for v in truth.values()) == 35006
    assert result.exit_code == ExitCode.OK
    assert result.workbook.is_file()
    assert result.workbook.parent == result.reports_dir
    assert result.parquet["exceptions"].is_file()
    assert result.sync.counts["distributions"] >= 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.exit_code = ExitCode.SERVICE  # type: ignore[misc]


def test_a_rejected_file_makes_the_night_need_a_person(world: World) -> None:
    (world.inbox / "bad.csv").write_text("not,a,distribution,sheet\n1,2,3,4\n", encoding="utf-8")
    settings = world.settings.updated(pipeline={"inbox_settle_s": 0})
    result = night(settings, transport=world.transport)
    assert [f.state for f in result.files] == ["rejected"]
    assert (result.files_processed, result.files_rejected) == (0, 1)
    assert result.distributions_created == 0
    assert result.exit_code == ExitCode.NEEDS_PERSON == 1
    assert result.workbook.is_file()  # the reports are written all the same


def test_a_night_runs_its_steps_through_the_step_runner_it_is_given(world: World) -> None:
    """The entry point's step runner sees every step, in order (the `org-night` flow hands it
    one that makes each a Prefect task: tests/e2e/test_nightly_flow.py reads them back)."""
    write_sheet(world.inbox / "q4.csv", [("A-1", "veh_demo1", [100_00])])
    settings = world.settings.updated(pipeline={"inbox_settle_s": 0})
    seen: list[str] = []

    def recording(name: str, work: Callable[[], _R], /) -> _R:
        seen.append(name)
        return work()

    held: list[str] = []

    @contextmanager
    def slot() -> Iterator[None]:
        held.append(f"take before {len(seen)} step(s)")
        yield
        held.append(f"give back after {len(seen)} step(s)")

    result = night(settings, transport=world.transport, step=recording, around_service=slot)
    assert seen == list(STEPS) == ["ingest", "sync", "reconcile"]
    # ingest and sync talk to the service: the slot is held around them, not around reconcile
    assert held == ["take before 0 step(s)", "give back after 2 step(s)"]
    assert result.files_processed == 1


def _org_night(files: tuple[tuple[str, str, int], ...], exceptions: tuple[object, ...]) -> object:
    from datetime import date

    from fundpipe.nights import OrgNight
    from fundpipe.submit.verdicts import FileOutcome

    return OrgNight(
        "org_a",
        date(2026, 11, 30),
        files=tuple(
            FileOutcome(name, f"h{n}", state, rows=3, total_cents=cents, message=f"{name} says")  # type: ignore[arg-type]
            for n, (name, state, cents) in enumerate(files)
        ),
        exceptions=exceptions,  # type: ignore[arg-type]
    )


def test_the_verdict_says_what_needs_a_person_how_much_and_by_when() -> None:
    from fundpipe.config import Organization
    from fundpipe.nights import Finding, row_of
    from fundpipe.vocabulary import ExceptionRecord, Verdict

    org = Organization(id="org_a", name="Alder")
    clean = row_of(org, "Completed", "", _org_night((("q4.csv", "processed", 500),), ()))  # type: ignore[arg-type]
    assert (clean.verdict, clean.why) == (Verdict.OK, ())

    shortfall = ExceptionRecord(
        "EX-1", "open", 4, "shortfall on veh_1", 12_000_00, "fund it", "shortfall", False
    )
    failed_payment = ExceptionRecord(
        "EX-2", "open", 0, "payment failed", 250_00, "pay again", "status_mismatch", True
    )
    settled = ExceptionRecord("EX-3", "acknowledged", 9, "seen", 1, "-", "extra", False)
    night = _org_night(
        (("q4.csv", "processed", 500), ("bad.csv", "rejected", 0)),
        (shortfall, failed_payment, settled),
    )
    row = row_of(org, "Completed", "", night)  # type: ignore[arg-type]
    assert row.verdict is Verdict.NEEDS_A_PERSON
    assert row.why == (
        Finding("bad.csv rejected: bad.csv says", "3 rows", "before the next night"),
        # an exception of any kind: one still due from an earlier night, one new tonight
        # each led by its kind in words, not the warehouse's `shortfall` / `status_mismatch`
        Finding(
            "Vehicle short of funds: shortfall on veh_1 — fund it",
            "$12,000.00",
            "overdue: open 4 days",
        ),
        Finding(
            "Payment failed, cancelled or not confirmed: payment failed — pay again",
            "$250.00",
            "today (new or worse tonight)",
        ),
    )
    assert row.why[1].plain == (
        "Vehicle short of funds: shortfall on veh_1 — fund it ($12,000.00) — overdue: open 4 days"
    )

    down = row_of(org, "Failed", "could not reach the service", None, host="api.example.com")
    assert down.verdict is Verdict.FAILED
    (why,) = down.why
    assert why.what == (
        "the night did not complete (service host api.example.com): could not reach the service"
    )
    # the verdict and why travel with the row's one JSON form
    assert row.as_json()["verdict"] == "needs a person"
    assert down.as_json()["why"][0]["what"] == why.what


def test_a_night_with_nothing_new_says_so_and_keeps_its_report(world: World) -> None:
    """Issue 44: no new file and no change at the service → one line, no new report folder."""
    import datetime as dt

    write_sheet(world.inbox / "q4.csv", [("A-1", "veh_demo1", [100_00])])
    settings = world.settings.updated(pipeline={"inbox_settle_s": 0})
    at = dt.datetime(2026, 12, 1, 9, tzinfo=dt.UTC)
    first = night(settings, transport=world.transport, clock=lambda: at)
    assert first.files_processed == 1
    assert first.nothing_new == ""
    later = at + dt.timedelta(hours=3)
    again = night(settings, transport=world.transport, clock=lambda: later)
    assert again.reconcile.unchanged
    assert again.reports_dir == first.reports_dir
    assert again.nothing_new.startswith("nothing new: no new file and no change at the service")
    assert str(first.reports_dir) in again.nothing_new
    reports = settings.local.reports_folder
    assert [p for p in reports.glob("*/*") if p.is_dir()] == [first.reports_dir]
    assert (reports / "latest").resolve() == first.reports_dir

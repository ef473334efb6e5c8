"""What the desk reads, through the library the CLI uses: the organizations of the data
folder (`fundpipe.orgs`), their open exceptions (`fundpipe.reconcile.lifecycle`) and the words
of a night (`fundpipe.vocabulary`). No new way into the warehouse. (The exception queue's own
reading and a person's acts are `fundpipe.desk._exceptions_reading`.)
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, TypeVar

from fundpipe.cents import format_cents
from fundpipe.config import Settings
from fundpipe.orgs import Among, every_org_settings
from fundpipe.reconcile import (
    ExceptionTally,
    FiledReport,
    filed_reports,
    filed_summary,
    latest_as_of,
    tally_exceptions,
)
from fundpipe.vocabulary import ExceptionRecord, ExceptionState, Verdict, kind_words
from fundpipe.warehouse import Warehouse
from fundpipe.words import counted

T = TypeVar("T")

__all__ = [
    "DeskOrg",
    "Health",
    "OrgMorning",
    "ToDo",
    "beside",
    "desk_orgs",
    "open_tally",
    "org_morning",
]


@dataclass(frozen=True, slots=True)
class DeskOrg:
    """An organization of the data folder, with its settings."""

    id: str
    name: str
    settings: Settings

    @property
    def warehouse_file(self) -> Path:
        """Its warehouse."""
        return self.settings.local.warehouse_file


def desk_orgs(settings: Settings) -> dict[str, DeskOrg]:
    """Every organization of the data folder (the configured list, else the folders under
    ``data/orgs/``), by id, each with its display name (its id when it has none)."""
    found = {}
    for one in every_org_settings(settings, None, among=Among.LOCAL):
        if one.org.id is None:
            continue  # the client's own, unnamed organization has no page of its own
        found[one.org.id] = DeskOrg(one.org.id, one.org.name or one.org.id, one.settings)
    return found


@dataclass(frozen=True, slots=True)
class ToDo:
    """One line of the morning: what, how much, by when, and the exception it is."""

    what: str
    how_much: str
    by_when: str
    exception_id: str


@dataclass(frozen=True, slots=True)
class OrgMorning:
    """One organization's morning: last night's date, its verdict and the things to do."""

    org: DeskOrg
    as_of: date | None
    verdict: Verdict
    #: the first MORNING_LINES things to do, oldest first
    to_do: tuple[ToDo, ...]
    open_cents: int
    health: Health | None = None
    #: every open exception, and those past the first MORNING_LINES by kind: (kind, words, n)
    open_count: int = 0
    more: tuple[tuple[str, str, int], ...] = ()
    #: the latest report's Summary figures, each (what, amount in words: never a signed sum)
    figures: tuple[tuple[str, str], ...] = ()
    #: the latest report's counts, each (what, how many)
    counts: tuple[tuple[str, int], ...] = ()

    @property
    def open_total(self) -> str:
        """The open exceptions' amount, in dollars."""
        return format_cents(self.open_cents)


@dataclass(frozen=True, slots=True)
class Health:
    """An organization's nights as its reports tell them: the newest night's as-of day, the
    last good one (a night's report with no open exception) and the nights since."""

    latest_night: date
    last_good_night: date | None

    @property
    def nights_behind(self) -> int | None:
        """Nights since the last good one (0: the newest was good; None: none good yet)."""
        if self.last_good_night is None:
            return None
        return (self.latest_night - self.last_good_night).days


def _nights(reports: list[FiledReport]) -> list[FiledReport]:
    """Each as-of day's newest night, newest first: a report for its own day (a past as-of
    or a report as known at an earlier time re-reads; it is no night)."""
    seen: dict[date, FiledReport] = {}
    for report in reports:  # newest as-of first, newest knowledge first
        if report.known_at >= report.run_at and report.as_of not in seen:
            seen[report.as_of] = report
    return list(seen.values())


def _open_in(report: FiledReport) -> int:
    """The exceptions still open in a report (acknowledged ones are not)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    states = pq.read_table(report.folder / "exceptions.parquet", columns=["state"]).column(0)
    return len(states) - int(pc.sum(pc.equal(states, "acknowledged")).as_py() or 0)


def health_of(reports: list[FiledReport]) -> Health | None:
    """The health the filed reports tell (None before the first night)."""
    nights = _nights(reports)
    if not nights:
        return None
    good = next((n.as_of for n in nights if _open_in(n) == 0), None)
    return Health(nights[0].as_of, good)


def _signed(cents: int, below: str, above: str) -> str:
    """A signed amount said in words: its size, and which way."""
    if cents == 0:
        return format_cents(0)
    return f"{format_cents(abs(cents))} {below if cents < 0 else above}"


def _figures(
    org: DeskOrg, report: FiledReport
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, int], ...]]:
    """The Summary's figures and counts of ``report`` (the workbook's Summary figures)."""
    s = filed_summary(org.settings, report)
    figures = (
        ("Depository available", format_cents(s.available_cents)),
        ("Open obligations", format_cents(s.obligations_cents)),
        ("Failed payments still owed", format_cents(s.failed_owed_cents)),
        ("Staged payments past due", format_cents(s.past_due_cents)),
        ("Shortfall", format_cents(s.shortfall_cents)),
        (
            "Unexplained this month",
            _signed(s.unexplained_cents, "less at the service", "more at the service"),
        ),
        (
            "Reconciling items open",
            _signed(s.reconciling_cents, "of debits", "of credits"),
        ),
    )
    counts = (
        ("Vehicles short of funds", s.vehicles_short),
        ("Distributions not tying out", s.distributions_not_tying),
        ("Open exceptions", s.open_exceptions),
    )
    return figures, counts


@contextmanager
def beside(read: Callable[..., T], *args: Any, **kwargs: Any) -> Iterator[Future[T]]:
    """``read(*args, **kwargs)`` run in a thread during the block, with this context (inside
    `fundpipe.warehouse.shared_reads`, its own cursor of the page's connection); the block
    takes its result from the future."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        yield pool.submit(contextvars.copy_context().run, read, *args, **kwargs)


def open_tally(org: DeskOrg, **asked: Any) -> ExceptionTally:
    """The organization's open exceptions as ``asked`` (`fundpipe.reconcile.tally_exceptions`:
    filters, order, the page); none before its first night."""
    if not org.warehouse_file.exists():
        return ExceptionTally((), 0, 0, (), (), 0, ())
    return tally_exceptions(Warehouse(org.warehouse_file), state=ExceptionState.OPEN, **asked)


def _line(e: ExceptionRecord) -> ToDo:
    kind = kind_words(e.kind)
    # a sheet's exception names it already ("Sheet q4.csv rejected: …"), as the night says it
    said = e.what.lower().startswith(kind.lower()) or e.what.startswith("Sheet ")
    what = e.what if said else f"{kind}: {e.what}"
    when = "today (new)" if e.age_days == 0 else f"overdue: open {counted(e.age_days, 'day')}"
    return ToDo(f"{what} — {e.what_to_do}", e.amount, when, e.id)


#: The things to do the morning lists one a line; the rest are counted by kind, each count a
#: link to the queue filtered to that kind (a bad night's 1,700 lines are no list to read).
MORNING_LINES = 20


def _more_by_kind(rest: tuple[tuple[str, int], ...]) -> tuple[tuple[str, str, int], ...]:
    return tuple(
        (kind, kind_words(kind), n)
        for kind, n in sorted(rest, key=lambda kn: (-kn[1], kind_words(kn[0])))
    )


def org_morning(org: DeskOrg) -> OrgMorning:
    """The organization's morning from its warehouse and reports: NEEDS A PERSON while an
    exception is open, one line per open exception; its health and the latest night's Summary
    figures from its filed reports. The figures are read beside the exceptions, in a thread
    (inside `fundpipe.warehouse.shared_reads`, each has its own cursor of one connection)."""
    reports = filed_reports(org.settings.local.reports_folder)
    nights = _nights(reports)
    if nights:
        with beside(_figures, org, nights[0]) as read:
            found = open_tally(org, order="age", limit=MORNING_LINES)
            figures, counts = read.result()
    else:
        found = open_tally(org, order="age", limit=MORNING_LINES)
        figures, counts = (), ()
    return OrgMorning(
        org=org,
        as_of=latest_as_of(org.settings.local.reports_folder),
        verdict=Verdict.NEEDS_A_PERSON if found.count else Verdict.OK,
        to_do=tuple(_line(e) for e in found.shown),
        open_cents=found.total_cents,
        open_count=found.count,
        more=_more_by_kind(found.after_by_kind),
        health=health_of(reports),
        figures=figures,
        counts=counts,
    )

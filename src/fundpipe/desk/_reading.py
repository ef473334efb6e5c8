"""What the desk reads and does, through the library the CLI uses: the organizations of the
data folder (`fundpipe.orgs`), their exceptions and a person's acknowledgement
(`fundpipe.reconcile.lifecycle`, written to the durable record as `exceptions ack` writes it),
and the words of a night (`fundpipe.vocabulary`). No new way into the warehouse.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

from fundpipe.cents import format_cents
from fundpipe.config import Settings
from fundpipe.desk._session import Person
from fundpipe.orgs import Among, every_org_settings
from fundpipe.reconcile import (
    ExceptionNotFoundError,
    acknowledge,
    latest_as_of,
    list_exceptions,
)
from fundpipe.record import decision_sink
from fundpipe.vocabulary import ExceptionRecord, ExceptionState, Verdict, kind_words
from fundpipe.warehouse import Warehouse
from fundpipe.words import counted

__all__ = [
    "DeskOrg",
    "OrgMorning",
    "ToDo",
    "acknowledge_exception",
    "desk_orgs",
    "open_exceptions",
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
    to_do: tuple[ToDo, ...]
    open_cents: int

    @property
    def open_total(self) -> str:
        """The open exceptions' amount, in dollars."""
        return format_cents(self.open_cents)


def open_exceptions(org: DeskOrg) -> list[ExceptionRecord]:
    """The organization's open exceptions, oldest first (none before its first night)."""
    if not org.warehouse_file.exists():
        return []
    found = list_exceptions(Warehouse(org.warehouse_file), state=ExceptionState.OPEN)
    return sorted(found, key=lambda e: (-e.age_days, e.id))


def _line(e: ExceptionRecord) -> ToDo:
    kind = kind_words(e.kind)
    # a sheet's exception names it already ("Sheet q4.csv rejected: …"), as the night says it
    said = e.what.lower().startswith(kind.lower()) or e.what.startswith("Sheet ")
    what = e.what if said else f"{kind}: {e.what}"
    when = "today (new)" if e.age_days == 0 else f"overdue: open {counted(e.age_days, 'day')}"
    return ToDo(f"{what} — {e.what_to_do}", e.amount, when, e.id)


def org_morning(org: DeskOrg) -> OrgMorning:
    """The organization's morning from its warehouse and reports: NEEDS A PERSON while an
    exception is open, one line per open exception."""
    found = open_exceptions(org)
    return OrgMorning(
        org=org,
        as_of=latest_as_of(org.settings.local.reports_folder),
        verdict=Verdict.NEEDS_A_PERSON if found else Verdict.OK,
        to_do=tuple(_line(e) for e in found),
        open_cents=sum(e.amount_cents or 0 for e in found),
    )


def acknowledge_exception(
    org: DeskOrg, exception_id: str, *, note: str, person: Person, now: datetime
) -> ExceptionRecord | None:
    """Acknowledge one of the organization's exceptions as ``person`` (the same call and the
    same durable record as `fundpipe exceptions ack`); None when the organization has no such
    unresolved exception."""
    if not org.warehouse_file.exists():
        return None
    by, source = person.recorded_as
    try:
        return acknowledge(
            Warehouse(org.warehouse_file),
            exception_id,
            note=note,
            by=by,
            user=source,
            now=now,
            record=decision_sink(org.settings),
        )
    except ExceptionNotFoundError:
        return None

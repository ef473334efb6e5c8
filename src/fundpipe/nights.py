"""The night over every organization, as a library call returning one typed result.

```python
result = nights(orgs, run_one, as_of=None)  # run_one(org) -> OrgRow: the shell's way to run one
result.rows[0].verdict                      # Verdict.OK / NEEDS_A_PERSON / FAILED
result.rows[0].why                          # what needs a person: (Finding(what, how_much, by_when), …)
result.totals, result.exit_code, result.as_json()
```

The types, each with one JSON form (``as_json``):

- :class:`OrgNight`: one organization's night as everyone reads it (its files, exceptions, the
  facts of its summary table, where it was published): small on purpose, built by the child
  run from `fundpipe.night.NightResult` (which keeps the steps' big results on the worker).
- :class:`OrgRow`: an organization's outcome in the night over every organization: how its run
  ended, its counts, its **verdict** and why, and (when the child ran in this process) its
  `OrgNight`. A child on another worker leaves ``as_json()``; the parent reads it back with
  :meth:`OrgRow.with_json`.
- :class:`Nights`: every organization's row, the totals (:class:`Totals`), the morning view's
  link: what `fundpipe run`, the `nightly` flow's state and artifact, the morning view and the
  on-call lines read. :class:`NightsFailed` carries it when one organization's night failed.

The verdict (`fundpipe.vocabulary.Verdict`), computed here and nowhere else:

- ``OK``: the night completed and nothing waits for a person;
- ``NEEDS_A_PERSON``: the night completed, but a file was rejected, in conflict or refused, or
  an exception of any kind (shortfall, payment failed or cancelled, unexplained balance, …) was
  opened or worsened (reopened) tonight, or an open exception is still due; each is a
  :class:`Finding` saying what, how much and by when, in plain words;
- ``FAILED``: the night did not complete (the service down, the inbox locked, its
  configuration, a bug): why, in plain words, and the service host it talked to.

A night's run *state* follows its verdict: ``OK`` is "Completed", ``NEEDS_A_PERSON`` is "Needs
a person" (`fundpipe.vocabulary.NEEDS_A_PERSON_STATE`: whether a file was rejected or only a
shortfall is open), ``FAILED`` is "Failed"; its
exit code (`fundpipe.errors.ExitCode`, `Nights.exit_code`) says the same: 1 at least for a night
that needs a person.

Longer than ~400 lines: the night over every organization is one vocabulary (an organization's
night, its row and verdict, the totals, the whole night), read together by every shell; split,
each part would import the others.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fundpipe.cents import format_cents
from fundpipe.errors import ExitCode, FundpipeError
from fundpipe.vocabulary import (
    KINDS,
    NEEDS_A_PERSON_STATE,
    ExceptionRecord,
    Verdict,
    kind_words,
)
from fundpipe.words import counted

if TYPE_CHECKING:
    from fundpipe.config import Organization
    from fundpipe.night import NightResult
    from fundpipe.reports import Published
    from fundpipe.submit import FileOutcome

__all__ = [
    "Finding",
    "Nights",
    "NightsFailed",
    "OrgNight",
    "OrgRow",
    "Totals",
    "file_json",
    "nights",
    "row_of",
]

_log = logging.getLogger(__name__)

#: How the service objects' mode reads to a person.
_MODES = {"test": "test mode", "live": "live mode", "not seen": "none seen"}

#: By when a person acts on what a night left (a file waits for the next night).
NEXT_NIGHT = "before the next night"


#: Exceptions a file opens: on the night it opens them, the file's own finding says it.
_FILE_KINDS = frozenset(str(k) for k, meaning in KINDS.items() if meaning.opened_by_a_file)


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing a person must act on: what, how much (dollars or rows; "" when none) and by
    when, in plain words."""

    what: str
    how_much: str = ""
    by_when: str = ""

    @property
    def plain(self) -> str:
        """One sentence: ``q4.csv rejected: … ($1,200.00) — before the next night``."""
        amount = f" ({self.how_much})" if self.how_much else ""
        when = f" — {self.by_when}" if self.by_when else ""
        return f"{self.what}{amount}{when}"

    def as_json(self) -> dict[str, str]:
        """Its JSON form."""
        return {"what": self.what, "how_much": self.how_much, "by_when": self.by_when}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Finding:
        """Read back `as_json` (a missing key is a KeyError naming it)."""
        return cls(str(data["what"]), str(data["how_much"]), str(data["by_when"]))


def _mode(*seen: bool | None) -> str:
    """ "live", "test" or "not seen", from the steps' `livemode`."""
    values = [v for v in seen if v is not None]
    if not values:
        return "not seen"
    return "live" if any(values) else "test"


def file_json(outcome: FileOutcome) -> dict[str, Any]:
    """One file's outcome, its JSON form (`fundpipe ingest --json`'s and a night's)."""
    return {
        "file": outcome.source_file,
        "state": outcome.state,
        "rows": outcome.rows,
        "distributions": outcome.distributions,
        "total_cents": outcome.total_cents,
        "payment_states": dict(outcome.payment_states),
        "message": outcome.message,
        "moved_to": str(outcome.moved_to) if outcome.moved_to else None,
        "roster": dict(outcome.roster) if outcome.roster else None,
    }


@dataclass(frozen=True)
class OrgNight:
    """One organization's night as its artifacts, the parent and `fundpipe run` show it: small
    on purpose (a child run's result; the night's plan stays behind)."""

    organization: str
    as_of: date
    files: tuple[FileOutcome, ...] = ()
    workbook: Path | None = None
    parquet: Mapping[str, Path] = field(default_factory=dict)
    exception_counts: Mapping[str, int] = field(default_factory=dict)
    #: tonight's exceptions: opened, still open, resolved
    exceptions: tuple[ExceptionRecord, ...] = ()
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    exit_code: int = 0
    #: where the night was published (`FUNDPIPE_REPORTS_URL`), else None
    published: Published | None = None
    accounts_synced: int = 0
    distributions_synced: int = 0
    available_cents: int = 0
    obligations_cents: int = 0
    shortfall_cents: int = 0
    #: the reconciliation's exceptions (its `exceptions` view)
    exceptions_found: int = 0
    #: "live", "test" or "not seen"
    service_objects: str = "not seen"
    #: what the night's start restored from the record, in one line ("" when nothing)
    restored: str = ""

    @classmethod
    def of(cls, organization: str, night: NightResult) -> OrgNight:
        """The shells' view of a typed night (every count an attribute of it)."""
        warnings = list(night.ingest.warnings)
        warnings += [w for w in night.sync.warnings if w not in warnings]
        # every inbox entry fundpipe leaves alone gets a word (the on-call text's line)
        warnings += [f"inbox: {entry.sentence}" for entry in night.ingest.left_alone]
        synced, summary = night.sync, night.reconcile.summary
        return cls(
            organization=organization,
            as_of=night.as_of,
            files=night.files,
            workbook=night.workbook,
            parquet=dict(night.parquet),
            exception_counts=dict(summary.exception_counts),
            exceptions=night.exceptions,
            warnings=tuple(warnings),
            notes=(*night.ingest.notes, *((night.nothing_new,) if night.nothing_new else ())),
            exit_code=int(night.exit_code),
            accounts_synced=synced.counts.get("financial_accounts", 0),
            distributions_synced=synced.counts.get("distributions", 0),
            available_cents=summary.available_cents,
            obligations_cents=summary.obligations_cents,
            shortfall_cents=summary.shortfall_cents,
            exceptions_found=summary.exceptions,
            service_objects=_mode(night.ingest.livemode, synced.livemode),
            restored=night.restored.sentence if night.restored is not None else "",
        )

    def in_state(self, *states: str) -> tuple[FileOutcome, ...]:
        """The files that ended in one of ``states``."""
        return tuple(f for f in self.files if f.state in states)

    @property
    def rejected(self) -> tuple[FileOutcome, ...]:
        """The files rejected tonight."""
        return self.in_state("rejected")

    @property
    def redropped(self) -> tuple[FileOutcome, ...]:
        """The files dropped again tonight: the same content as one processed before (each
        one's message names that file and when it was processed); nothing of them was sent."""
        return self.in_state("duplicate")

    @property
    def open_exceptions(self) -> tuple[ExceptionRecord, ...]:
        """Tonight's exceptions still open after it."""
        return tuple(e for e in self.exceptions if e.is_open)

    @property
    def opened_exceptions(self) -> tuple[ExceptionRecord, ...]:
        """The exceptions opened tonight."""
        return tuple(e for e in self.exceptions if e.opened)

    @property
    def reports(self) -> dict[str, Path]:
        """The reports by label: the workbook, then each view's Parquet (``parquet <view>``)."""
        found = {"workbook": self.workbook} if self.workbook else {}
        return {**found, **{f"parquet {k}": v for k, v in self.parquet.items()}}

    def url_of(self, path: Path | str | None) -> str | None:
        """Where the night published a local file (None: not published)."""
        return self.published.url_of(path) if self.published is not None else None

    def facts(self) -> list[tuple[str, int | str]]:
        """The night's summary table, as the `--json` output names it (money as dollars)."""
        processed = self.in_state("processed")
        return [
            ("files seen", len(self.files)),
            ("files processed (new)", len(processed)),
            ("files rejected", len(self.rejected)),
            ("files in conflict or refused", len(self.in_state("conflict", "refused"))),
            ("files already submitted (no-op)", len(self.redropped)),
            ("distributions submitted", sum(f.distributions for f in processed)),
            ("amount submitted", format_cents(sum(f.total_cents for f in processed))),
            ("accounts synced", self.accounts_synced),
            ("distributions synced", self.distributions_synced),
            ("depository available", format_cents(self.available_cents)),
            ("open obligations", format_cents(self.obligations_cents)),
            ("shortfall", format_cents(self.shortfall_cents)),
            ("exceptions", self.exceptions_found),
            ("service objects", self.service_objects),
            ("warnings", len(self.warnings)),
        ]

    def plain_facts(self) -> list[tuple[str, str]]:
        """The facts as a person reads them: capitalized labels, the service objects' mode in
        words ("Service objects", "test mode")."""
        rows = []
        for key, value in self.facts():
            label = key[:1].upper() + key[1:]
            text = _MODES.get(str(value), str(value)) if key == "service objects" else str(value)
            rows.append((label, text))
        return rows

    def findings(self) -> tuple[Finding, ...]:
        """What this night leaves for a person (see the module docstring): each file rejected,
        in conflict or refused, then each exception still open (opened or worsened tonight, or
        still due)."""
        found = [
            Finding(
                f"{Path(f.source_file).name} {f.state}: {f.message or 'see its error report'}",
                format_cents(f.total_cents) if f.total_cents else counted(f.rows, "row"),
                NEXT_NIGHT,
            )
            for f in self.in_state("rejected", "conflict", "refused")
        ]
        for e in self.open_exceptions:
            if e.opened_tonight and e.kind in _FILE_KINDS and found:
                continue  # tonight's file finding above is this exception: one line, not two
            # the kind in a person's words ("Vehicle short of funds"), never `shortfall`
            kind = kind_words(e.kind)
            # a sheet's exception names it already ("Sheet q4.csv rejected: …")
            said = e.what.lower().startswith(kind.lower()) or (
                e.kind in _FILE_KINDS and e.what.startswith("Sheet ")
            )
            what = e.what if said else f"{kind}: {e.what}"
            when = (
                "today (new or worse tonight)"
                if e.opened_tonight
                else f"overdue: open {counted(e.age_days, 'day')}"
            )
            found.append(Finding(f"{what} — {e.what_to_do}", e.amount, when))
        return tuple(found)

    def as_json(self) -> dict[str, Any]:
        """Its JSON form (a row's ``summary`` in `fundpipe run --json`)."""
        return {
            "as_of": self.as_of.isoformat(),
            "facts": dict(self.facts()),
            "files": [file_json(f) for f in self.files],
            "rejected_files": [
                {
                    "file": f.source_file,
                    "report": str(f.moved_to) if f.moved_to else None,
                    "message": f.message,
                }
                for f in self.rejected
            ],
            "redropped_files": [
                {"file": f.source_file, "message": f.message} for f in self.redropped
            ],
            "reports": {k: str(v) for k, v in self.reports.items()},
            "exceptions": self.exceptions_found,
            "exception_counts": dict(self.exception_counts),
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "exit_code": self.exit_code,
            "organization": self.organization,
            "open_exceptions": len(self.open_exceptions),
            "opened_ids": [e.id for e in self.opened_exceptions],
            "exception_list": [e.as_json("night") for e in self.open_exceptions],
            "published": (
                {"folder": self.published.folder, "urls": dict(self.published.urls)}
                if self.published is not None
                else None
            ),
            # what the night's start restored from the record (issue 40), else None
            "restored": self.restored or None,
        }


@dataclass(frozen=True)
class OrgRow:
    """One organization's outcome in the night over every organization."""

    organization: str
    name: str = ""
    #: the child run's state type, titled ("Completed", "Failed", "Cancelled", …)
    state: str = "Failed"
    files: int = 0
    rejected: int = 0
    distributions: int = 0
    total_cents: int = 0
    open_exceptions: int = 0
    exit_code: int = 0
    message: str = ""
    #: the child run's page in the Prefect UI, else its id
    run: str = ""
    as_of: str = ""
    #: where its night was published (FUNDPIPE_REPORTS_URL), for the morning view
    report_folder: str = ""
    #: what needs a person, for the parent's message
    rejected_names: tuple[str, ...] = ()
    new_exceptions: tuple[str, ...] = ()
    #: the service host its night talked to (said when it failed)
    host: str = ""
    #: what a completed night leaves for a person (`OrgNight.findings`)
    findings: tuple[Finding, ...] = ()
    #: the child's night (subflows; a child on another worker leaves only its row)
    night: OrgNight | None = None
    #: its open exceptions (for the parent's table of every organization's)
    exceptions: tuple[ExceptionRecord, ...] = ()

    @property
    def completed(self) -> bool:
        """Its child run completed."""
        return self.state == "Completed"

    @property
    def verdict(self) -> Verdict:
        """OK, NEEDS_A_PERSON or FAILED (see the module docstring)."""
        if not self.completed:
            return Verdict.FAILED
        return Verdict.NEEDS_A_PERSON if self.findings else Verdict.OK

    @property
    def why(self) -> tuple[Finding, ...]:
        """Why the verdict, in plain words: the findings, or why the night failed."""
        if self.completed:
            return self.findings
        where = f" (service host {self.host})" if self.host else ""
        what = f"the night did not complete{where}: {self.message or self.state.lower()}"
        return (Finding(what, "", "fix it and run the night again"),)

    @property
    def state_shown(self) -> str:
        """The state as the Prefect UI shows the child run: a completed night whose verdict is
        NEEDS_A_PERSON is "Needs a person", as its badge says."""
        return NEEDS_A_PERSON_STATE if self.verdict is Verdict.NEEDS_A_PERSON else self.state

    @property
    def total(self) -> str:
        """What its processed files asked for, in dollars."""
        return format_cents(self.total_cents)

    @property
    def label(self) -> str:
        """Its name and id (``Alder (org_a)``), or the id alone."""
        name = self.name
        return (
            f"{name} ({self.organization})"
            if name and name != self.organization
            else (self.organization)
        )

    def as_json(self) -> dict[str, Any]:
        """Its one JSON form: `fundpipe run --json`'s row, and what a child on another worker
        leaves for its parent (`with_json` reads it back)."""
        return {
            "organization": self.organization,
            "name": self.name,
            "state": self.state,
            "files": self.files,
            "rejected": self.rejected,
            "distributions": self.distributions,
            "total_cents": self.total_cents,
            "total": self.total,
            "open_exceptions": self.open_exceptions,
            "exit_code": self.exit_code,
            "message": self.message,
            "run": self.run,
            "as_of": self.as_of,
            "report_folder": self.report_folder,
            "rejected_names": list(self.rejected_names),
            "new_exceptions": list(self.new_exceptions),
            "host": self.host,
            "verdict": self.verdict.value,
            "why": [f.as_json() for f in self.why],
            "findings": [f.as_json() for f in self.findings],
            "summary": self.night.as_json() if self.night is not None else None,
            "exceptions": [e.as_json("night") for e in self.exceptions],
        }

    def with_json(self, left: Mapping[str, Any]) -> OrgRow:
        """This row with what a child left (`as_json`; a stopped child leaves only its
        ``exit_code``): its counts, findings and open exceptions. The state, message and run
        stay this row's (the parent's own view of the child run)."""
        counts = {
            name: int(left[name])
            for name in (
                "files",
                "rejected",
                "distributions",
                "total_cents",
                "open_exceptions",
                "exit_code",
            )
            if name in left
        }
        texts = {name: str(left[name]) for name in ("as_of", "report_folder") if name in left}
        lists = {
            name: tuple(str(v) for v in left[name])
            for name in ("rejected_names", "new_exceptions")
            if name in left
        }
        findings = tuple(Finding.from_json(f) for f in left.get("findings") or ())
        exceptions = tuple(ExceptionRecord.from_json(e) for e in left.get("exceptions") or ())
        return replace(
            self,
            **counts,  # type: ignore[arg-type]
            **texts,  # type: ignore[arg-type]
            **lists,  # type: ignore[arg-type]
            findings=findings or self.findings,
            exceptions=exceptions or self.exceptions,
        )


def row_of(
    org: Organization, state: str, message: str, night: OrgNight | None, host: str = ""
) -> OrgRow:
    """One organization's row: how its run ended (``state``, titled; ``message``) and, when
    known, its night."""
    row = OrgRow(
        organization=org.folder, name=org.name or "", state=state, message=message, host=host
    )
    if night is None:
        return row
    processed = night.in_state("processed")
    return replace(
        row,
        files=len(night.files),
        rejected=len(night.rejected),
        distributions=sum(f.distributions for f in processed),
        total_cents=sum(f.total_cents for f in processed),
        open_exceptions=len(night.open_exceptions),
        exit_code=night.exit_code,
        as_of=night.as_of.isoformat(),
        report_folder=night.published.folder if night.published is not None else "",
        rejected_names=tuple(Path(f.source_file).name for f in night.rejected),
        new_exceptions=tuple(e.id for e in night.opened_exceptions),
        findings=night.findings(),
        night=night,
        exceptions=night.open_exceptions,
    )


@dataclass(frozen=True, slots=True)
class Totals:
    """The night over every organization, added up."""

    organizations: int
    failed: int
    files: int
    rejected: int
    distributions: int
    total_cents: int
    open_exceptions: int

    @property
    def total(self) -> str:
        """Every organization's processed files together, in dollars."""
        return format_cents(self.total_cents)

    def line(self) -> str:
        """The night's run-log line: ``2 organizations, 3 files, 4 distributions ($1.00), 0
        open exceptions`` (the direct night and the Prefect flow log the same words)."""
        return (
            f"{counted(self.organizations, 'organization')}, {counted(self.files, 'file')}, "
            f"{counted(self.distributions, 'distribution')} ({self.total}), "
            f"{counted(self.open_exceptions, 'open exception')}"
        )

    def as_json(self) -> dict[str, Any]:
        """Its JSON form."""
        return {
            "organizations": self.organizations,
            "failed": self.failed,
            "files": self.files,
            "rejected": self.rejected,
            "distributions": self.distributions,
            "total_cents": self.total_cents,
            "total": self.total,
            "open_exceptions": self.open_exceptions,
        }


@dataclass(frozen=True)
class Nights:
    """The night over every organization: each one's row (with its verdict), the totals, the
    morning view's link (the `nightly` flow's result; `as_json` for `fundpipe run --json`)."""

    as_of: str | None
    rows: tuple[OrgRow, ...]
    #: the morning view's workbook URL (with FUNDPIPE_REPORTS_URL)
    morning: str | None = None

    @classmethod
    def of(cls, rows: Sequence[OrgRow], as_of: str | None) -> Nights:
        """The night of ``rows``: ``as_of`` asked for, else the first organization's date."""
        return cls(as_of=as_of or next((r.as_of for r in rows if r.as_of), None), rows=tuple(rows))

    @property
    def totals(self) -> Totals:
        """The sums of the rows."""
        rows = self.rows
        return Totals(
            organizations=len(rows),
            failed=len(self.failed),
            files=sum(r.files for r in rows),
            rejected=sum(r.rejected for r in rows),
            distributions=sum(r.distributions for r in rows),
            total_cents=sum(r.total_cents for r in rows),
            open_exceptions=sum(r.open_exceptions for r in rows),
        )

    @property
    def failed(self) -> tuple[OrgRow, ...]:
        """The organizations whose night did not complete."""
        return tuple(r for r in self.rows if not r.completed)

    @property
    def needing_a_person(self) -> tuple[OrgRow, ...]:
        """The organizations whose night completed but needs a person."""
        return tuple(r for r in self.rows if r.verdict is Verdict.NEEDS_A_PERSON)

    @property
    def rejected_files(self) -> list[tuple[str, FileOutcome]]:
        """Every rejected file, with its organization."""
        return [
            (r.organization, f) for r in self.rows if r.night is not None for f in r.night.rejected
        ]

    @property
    def redropped_files(self) -> list[tuple[str, FileOutcome]]:
        """Every file dropped again (the same content as one processed before), with its
        organization."""
        return [
            (r.organization, f) for r in self.rows if r.night is not None for f in r.night.redropped
        ]

    @property
    def warnings(self) -> list[str]:
        """Every organization's warnings, each naming its organization."""
        return [
            f"{r.organization}: {w}"
            for r in self.rows
            if r.night is not None
            for w in r.night.warnings
        ]

    @property
    def exit_code(self) -> int:
        """The worst organization's exit code; a completed night whose verdict is NEEDS A
        PERSON (a shortfall, an exception still due: no file rejected) is 1 at least, as a
        rejected file is — the exit code says what the verdict says."""
        needs = int(ExitCode.NEEDS_PERSON)
        return max(
            (
                max(r.exit_code, needs) if r.verdict is Verdict.NEEDS_A_PERSON else r.exit_code
                for r in self.rows
            ),
            default=0,
        )

    def as_json(self) -> dict[str, Any]:
        """Its JSON form (`fundpipe run --json`)."""
        return {
            "as_of": self.as_of,
            "organizations": {r.organization: r.as_json() for r in self.rows},
            "totals": self.totals.as_json(),
            "rejected_files": [
                {
                    "file": f.source_file,
                    "report": str(f.moved_to) if f.moved_to else None,
                    "message": f.message,
                    "organization": org,
                }
                for org, f in self.rejected_files
            ],
            "redropped_files": [
                {"file": f.source_file, "message": f.message, "organization": org}
                for org, f in self.redropped_files
            ],
            "warnings": self.warnings,
            "exit_code": self.exit_code,
            "morning": self.morning,
        }


class NightsFailed(FundpipeError):
    """The night over every organization, when one organization's did not complete: the parent
    run's Failed state carries it (a failed state's data must be an exception for Prefect to
    read it), with every organization's night (`nights`)."""

    def __init__(self, message: str, nights: Nights) -> None:
        """The parent's one-line message, and the night over every organization."""
        super().__init__(message)
        self.nights = nights
        worst = ExitCode(nights.exit_code)
        self.exit_code = worst if worst >= ExitCode.USAGE else ExitCode.INTERNAL

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles with its night (a result a worker persists)."""
        return (type(self), (str(self), self.nights))


def nights(
    orgs: Sequence[Organization],
    run_one: Callable[[Organization], OrgRow],
    *,
    as_of: str | None,
) -> Nights:
    """Every organization's night, concurrently (one thread each, in the caller's context):
    ``run_one(org)`` runs one (the `nightly` flow's starts a child run) and returns its row.
    What one raises ends that organization's night only: a FAILED row with the error's exit
    code and message (an unexpected exception is logged with its traceback: exit 5).
    ``as_of``: the report date asked for, else the first organization's."""
    from fundpipe.errors import InternalError, as_fundpipe_error

    def one(org: Organization) -> OrgRow:
        try:
            return run_one(org)
        except Exception as exc:  # one organization's failure never stops the others
            error = as_fundpipe_error(exc)
            if isinstance(error, InternalError):
                _log.error("internal error in %s's night", org.folder, exc_info=exc)
            return replace(row_of(org, "Failed", str(error), None), exit_code=int(error.exit_code))

    with ThreadPoolExecutor(max_workers=max(1, len(orgs)), thread_name_prefix="org") as pool:
        futures = [pool.submit(contextvars.copy_context().run, one, org) for org in orgs]
        return Nights.of([f.result() for f in futures], as_of)

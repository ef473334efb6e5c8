"""The night as the shells show it, typed: one organization's night (`OrgNight`, with its
`NightFacts`), its row of the night over every organization (`OrgRow`) and that night's
summary (`CrossSummary`): for the child's and the parent's artifacts, states and events, the
morning view and `fundpipe run`.

`OrgNight` (`fundpipe.app.prefect.orgnight`) is built from `fundpipe.night.NightResult` by the
child run; an `OrgRow` from it (subflows) or from the JSON a child on another worker left
(`fundpipe.app.prefect.handoff`). The `nightly` flow's result is the typed `CrossSummary` (it
pickles). JSON exists only at the edges: `as_json` (`fundpipe run --json`) and
`hand_off`/`OrgRow.from_hand_off` (a deployment child's row artifact).

The totals are the sums of the rows: `total_cents` is what every organization's processed files
asked for together.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fundpipe.app.prefect.orgnight import NEEDS_REVIEW, NightFacts, OrgNight
from fundpipe.cents import format_cents
from fundpipe.errors import ExitCode, FundpipeError
from fundpipe.night import NightException

if TYPE_CHECKING:
    from prefect import State

    from fundpipe.config import Organization
    from fundpipe.submit.verdicts import FileOutcome

__all__ = [
    "CrossSummary",
    "NightFacts",
    "NightsFailed",
    "OrgNight",
    "OrgRow",
    "Totals",
    "cross_markdown",
    "cross_summary",
    "org_row",
    "run_link",
    "summary_of_run",
]


@dataclass(frozen=True)
class OrgRow:
    """One organization's row of the night over every organization."""

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
    #: the child's night (subflows; a child on another worker leaves only its row)
    night: OrgNight | None = None
    #: its open exceptions (for the parent's table of every organization's)
    exceptions: tuple[NightException, ...] = ()

    @property
    def completed(self) -> bool:
        """Its child run completed."""
        return self.state == "Completed"

    @property
    def state_shown(self) -> str:
        """The state as the Prefect UI shows the child run: a completed night that needs a
        person (exit code 1) is "Needs review", as its badge says."""
        return NEEDS_REVIEW if self.completed and self.exit_code == 1 else self.state

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

    def _fields(self) -> dict[str, Any]:
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
        }

    def as_json(self) -> dict[str, Any]:
        """The `--json` form of the row (its child's night under ``summary``)."""
        return {
            **self._fields(),
            "rejected_names": ", ".join(self.rejected_names),
            "new_exceptions": ", ".join(self.new_exceptions),
            "summary": self.night.as_json() if self.night is not None else None,
            "exceptions": [e.as_dict() for e in self.exceptions],
        }

    def hand_off(self) -> dict[str, Any]:
        """What a child on another worker leaves for its parent (`from_hand_off` reads it)."""
        return {
            **self._fields(),
            "rejected_names": list(self.rejected_names),
            "new_exceptions": list(self.new_exceptions),
            "exceptions": [dataclasses.asdict(e) for e in self.exceptions],
        }

    def from_hand_off(self, left: Mapping[str, Any]) -> OrgRow:
        """This row with what a child left (`hand_off`; a stopped child leaves only its
        ``exit_code``)."""
        kept = {
            name: type(getattr(self, name))(left[name])
            for name in (*self._fields(), "rejected_names", "new_exceptions")
            if name in left and name != "total"
        }
        exceptions = tuple(NightException(**e) for e in left.get("exceptions") or ())
        return dataclasses.replace(self, **kept, exceptions=exceptions or self.exceptions)


def org_row(org: Organization, state: State[Any] | None, night: OrgNight | None) -> OrgRow:
    """One organization's row of the cross-organization summary."""
    row = OrgRow(
        organization=org.folder,
        name=org.name or "",
        state=state.type.value.title() if state is not None else "Failed",
        message=(state.message if state is not None else None) or "",
    )
    if night is None:
        return row
    processed = night.in_state("processed")
    cents = sum(f.total_cents for f in processed)
    return dataclasses.replace(
        row,
        files=len(night.files),
        rejected=len(night.rejected),
        distributions=sum(f.distributions for f in processed),
        total_cents=cents,
        open_exceptions=len(night.open_exceptions),
        exit_code=night.exit_code,
        as_of=night.as_of.isoformat(),
        report_folder=night.published.folder if night.published is not None else "",
        rejected_names=tuple(Path(f.source_file).name for f in night.rejected),
        new_exceptions=tuple(e.id for e in night.opened_exceptions),
        night=night,
        exceptions=night.open_exceptions,
    )


def run_link(flow_run_id: Any) -> str:
    """The Prefect UI page of a flow run (`PREFECT_UI_URL`), else the run's id."""
    from prefect.settings import PREFECT_UI_URL

    ui = PREFECT_UI_URL.value()
    return f"{ui.rstrip('/')}/runs/flow-run/{flow_run_id}" if ui else str(flow_run_id)


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

    def as_json(self) -> dict[str, Any]:
        """The `--json` form."""
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
class CrossSummary:
    """The night over every organization: each one's row, the totals, the combined facts (the
    `nightly` flow's result, as `as_json`)."""

    as_of: str | None
    rows: tuple[OrgRow, ...]
    #: the morning view's workbook URL (with FUNDPIPE_REPORTS_URL)
    morning: str | None = None

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
    def rejected_files(self) -> list[tuple[str, FileOutcome]]:
        """Every rejected file, with its organization."""
        return [
            (r.organization, f) for r in self.rows if r.night is not None for f in r.night.rejected
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
        """The worst organization's exit code."""
        return max((r.exit_code for r in self.rows), default=0)

    def as_json(self) -> dict[str, Any]:
        """The `--json` form (and the `nightly` flow's result), unchanged since the dict it
        replaced."""
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
            "warnings": self.warnings,
            "exit_code": self.exit_code,
            "morning": self.morning,
        }


class NightsFailed(FundpipeError):
    """The night over every organization, when one organization's did not complete: the parent
    run's Failed state carries it (a failed state's data must be an exception for Prefect to
    read it), with the summary of every organization's night (`summary_of_run` reads it)."""

    def __init__(self, message: str, summary: CrossSummary) -> None:
        """The parent's one-line message, and the summary."""
        super().__init__(message)
        self.summary = summary
        worst = ExitCode(summary.exit_code)
        self.exit_code = worst if worst >= ExitCode.USAGE else ExitCode.INTERNAL

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles with its summary (a result a worker persists)."""
        return (type(self), (str(self), self.summary))


def cross_summary(rows: Sequence[OrgRow], as_of: str | None) -> CrossSummary:
    """The night over every organization: `as_of`, else the first organization's date."""
    return CrossSummary(
        as_of=as_of or next((r.as_of for r in rows if r.as_of), None), rows=tuple(rows)
    )


def cross_markdown(summary: CrossSummary) -> str:
    """The parent run's artifact: one row per organization, and the totals."""
    lines = [
        f"# fundpipe nightly run — {summary.as_of} — every organization",
        "",
        "| organization | state | files | rejected | distributions | total | open exceptions "
        "| run |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in summary.rows:
        run = row.run
        link = f"[{run.rsplit('/', 1)[-1]}]({run})" if run.startswith("http") else f"`{run}`"
        lines.append(
            f"| {row.organization} | {row.state_shown} | {row.files} | {row.rejected} | "
            f"{row.distributions} | {row.total} | {row.open_exceptions} | {link} |"
        )
    t = summary.totals
    lines.append(
        f"| **all {t.organizations}** | {t.failed} failed | {t.files} | {t.rejected} "
        f"| {t.distributions} | {t.total} | {t.open_exceptions} | |"
    )
    if summary.morning:
        lines += ["", f"Morning view across organizations: [morning.xlsx]({summary.morning})"]
    if summary.failed:
        lines += ["", "## Did not complete", ""]
        lines += [f"- {r.organization} ({r.state}): {r.message}" for r in summary.failed]
    return "\n".join(lines) + "\n"


def summary_of_run(state: Any) -> CrossSummary:
    """The summary of a finished `nightly` flow run (a Prefect state).

    The night over every organization (`fundpipe.app.prefect.fanout`) returns its summary even
    when an organization failed: its `exit_code` says so, and its rows say which and why.

    A run that did not complete raises the fundpipe error its exit code stands for, with the
    state's message (fundpipe's plain sentence): the CLI prints it and exits with that code.
    """
    from fundpipe.errors import (
        InputError,
        InternalError,
        LockHeld,
        ServiceUnavailable,
    )

    data = state.result(raise_on_failure=False) if state.data is not None else None
    if isinstance(data, CrossSummary):
        return data
    if isinstance(data, NightsFailed):
        # a night over several organizations tells each one's, even when one failed
        return data.summary
    # a run that crashed, or failed with no error of ours, is a bug's: internal [5]
    code = data.exit_code if isinstance(data, FundpipeError) else ExitCode.INTERNAL
    error: type[FundpipeError] = {
        ExitCode.USAGE: InputError,
        ExitCode.LOCKED: LockHeld,
        ExitCode.INTERNAL: InternalError,
        ExitCode.SERVICE: ServiceUnavailable,
    }.get(ExitCode(code), InternalError)
    raise error(state.message or state.name)

"""The reconciliation: each filed report's tabs as pages, its files to download, any past
as-of and known-at report opened.

The pages read what the workbook is built from, through the library: the report folders
(`fundpipe.reconcile.filed_reports`, `reports/<as-of>/<run time>Z/` with its `report.json`),
the Summary (`filed_summary`, `workbook_summary`) and each tab's Parquet file laid out as the
workbook lays it out (`SHEETS`, `SHEET_LAYOUT`, `fundpipe.reports.screen_table`). The report
shown is chosen by ``?as_of=YYYY-MM-DD&run=<run folder>`` (default: the latest); a download is
one file of that folder, by name, after the folder is found among the organization's own
reports (a guessed path, or ``..``, finds nothing: 404).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, Response

from fundpipe.cents import format_cents
from fundpipe.desk._members import Right
from fundpipe.desk._reading import DeskOrg
from fundpipe.desk._web import MEMBER, MemberOrg, SignedIn, page, require, state_of
from fundpipe.reconcile import (
    SHEET_LAYOUT,
    SHEETS,
    FiledReport,
    filed_reports,
    filed_summary,
    latest_report,
    workbook_summary,
)
from fundpipe.reports import SheetSource, screen_table
from fundpipe.vocabulary import kind_words

__all__ = ["TABS", "rejected_files", "router"]

router = APIRouter()

#: The pages after the Summary: (path, the workbook tab it shows).
TABS: tuple[tuple[str, str], ...] = (
    ("rollforward", "Roll-forward"),
    ("tieout", "Tie-out"),
    ("funding", "Funding"),
    ("exceptions", "Exceptions"),
)
#: The exceptions that are a sheet file turned away, and the files' kinds in words.
_FILE_KINDS = ("file_rejected", "file_conflict", "file_refused")
#: Rows a tab's page shows (the downloads have every row; the Total is over every row).
PAGE_ROWS = 500
_VIEW_OF = dict(SHEETS)


@dataclass(frozen=True, slots=True)
class RejectedFile:
    """A sheet file the night turned away: its name, why, what to do, since when."""

    file: str
    kind: str
    what: str
    action: str
    first_seen: str


def _report(
    org: DeskOrg, as_of: str | None, run: str | None
) -> tuple[FiledReport | None, list[FiledReport]]:
    """The report asked for (default: the latest) among the organization's filed ones."""
    reports = org.settings.local.reports_folder
    every = filed_reports(reports)
    if as_of is None and run is None:
        return latest_report(reports), every
    for filed in every:
        if filed.as_of.isoformat() == as_of and (run is None or filed.run == run):
            return filed, every
    raise HTTPException(404, "No such report.")


def rejected_files(report: FiledReport) -> list[RejectedFile]:
    """The sheet files rejected (or in conflict, or refused) as of the report, from its
    exceptions' Parquet file."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(
        report.folder / "exceptions.parquet",
        columns=["kind", "source_file", "what", "action", "first_seen"],
    )
    table = table.filter(pc.is_in(table.column("kind"), value_set=_kinds_array()))
    return [
        RejectedFile(
            file=str(r["source_file"] or ""),
            kind=kind_words(str(r["kind"])),
            what=str(r["what"] or ""),
            action=str(r["action"] or ""),
            first_seen=r["first_seen"].isoformat() if r["first_seen"] else "",
        )
        for r in table.to_pylist()
    ]


def _kinds_array() -> Any:
    import pyarrow as pa

    return pa.array(_FILE_KINDS, pa.string())


def _context(
    request: Request, person: SignedIn, org: DeskOrg, report: FiledReport, every: list[FiledReport]
) -> dict[str, Any]:
    """What every tab's page shows around its table: the report, the runs, the links."""
    query = urlencode({"as_of": report.as_of.isoformat(), "run": report.run})
    files = sorted(
        p.name for p in report.folder.iterdir() if p.is_file() and p.suffix in {".xlsx", ".parquet"}
    )
    days: dict[str, list[FiledReport]] = {}
    for filed in every:
        days.setdefault(filed.as_of.isoformat(), []).append(filed)
    return {
        "org": org,
        "report": report,
        "query": query,
        "tabs": TABS,
        "days": days,
        "files": files,
        "may_download": state_of(request).members.may(person.email, org.id, Right.DOWNLOAD),
    }


def _none_yet(request: Request, org: DeskOrg) -> Response:
    return page(request, "recon_none.html", org=org)


@router.get(
    "/orgs/{org_id}/reconciliation", openapi_extra=MEMBER, summary="The reconciliation: Summary"
)
def summary_page(
    request: Request,
    org: MemberOrg,
    person: SignedIn,
    as_of: str | None = None,
    run: str | None = None,
) -> Response:
    """A report's Summary (default: the latest report): the run's facts, the figures, the
    distribution tie-out, the exceptions by kind and the files rejected; every filed report
    listed by as-of day and knowledge time."""
    report, every = _report(org, as_of, run)
    if report is None:
        return _none_yet(request, org)
    summary = workbook_summary(filed_summary(org.settings, report), report.folder)
    # the page is the organization's by name; its files are downloads, not a server path
    facts = [(k, v) for k, v in summary.run_facts if k not in {"Parquet files", "Organization id"}]
    return page(
        request,
        "recon_summary.html",
        **_context(request, person, org, report, every),
        current="summary",
        summary=summary,
        facts=facts,
        figures=[(k, format_cents(c)) for k, c in summary.totals_cents],
        tie_out=[
            (t.label.strip(), f"{t.payments:,}", format_cents(t.cents), t.total)
            for t in summary.tie_out
        ],
        rejected=rejected_files(report),
    )


def _tab(path: str, tab: str) -> None:
    view = _VIEW_OF[tab]

    def tab_page(
        request: Request,
        org: MemberOrg,
        person: SignedIn,
        as_of: str | None = None,
        run: str | None = None,
    ) -> Response:
        report, every = _report(org, as_of, run)
        if report is None:
            return _none_yet(request, org)
        source = SheetSource(tab, report.folder / f"{view}.parquet", **SHEET_LAYOUT.get(view, {}))
        return page(
            request,
            "recon_tab.html",
            **_context(request, person, org, report, every),
            current=path,
            title=tab,
            table=screen_table(source, PAGE_ROWS),
            rejected=rejected_files(report) if path == "exceptions" else None,
        )

    tab_page.__name__ = f"{path}_page"
    tab_page.__doc__ = f"A report's {tab} tab, as the workbook shows it, with its Total."
    router.add_api_route(
        f"/orgs/{{org_id}}/reconciliation/{path}",
        tab_page,
        methods=["GET"],
        openapi_extra=MEMBER,
        summary=f"The reconciliation: {tab}",
    )


for _path, _name in TABS:
    _tab(_path, _name)


@router.get(
    "/orgs/{org_id}/reconciliation/download",
    openapi_extra=MEMBER,
    summary="Download a report's workbook or Parquet file",
)
def download(
    request: Request,
    org: MemberOrg,
    person: SignedIn,
    as_of: str | None = None,
    run: str | None = None,
    file: str = "reconciliation.xlsx",
) -> Response:
    """One file of one of the organization's reports (the workbook or a Parquet file), found
    by name among that folder's own files: any other name, or a path, is 404."""
    require(request, person, org, Right.DOWNLOAD, "download reports")
    report, _ = _report(org, as_of, run)
    if report is None:
        raise HTTPException(404, "No such file.")
    found = {
        p.name: p
        for p in report.folder.iterdir()
        if p.is_file() and not p.is_symlink() and p.suffix in {".xlsx", ".parquet"}
    }
    path = found.get(file)
    reports = org.settings.local.reports_folder.resolve()
    if path is None or not path.resolve().is_relative_to(reports):
        raise HTTPException(404, "No such file.")
    state_of(request).log.event(
        "downloaded",
        email=person.email,
        org=org.id,
        path=request.url.path,
        detail=f"{report.as_of.isoformat()}/{report.run}/{path.name}",
    )
    media = (
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
        if path.suffix == ".xlsx"
        else "application/vnd.apache.parquet"
    )
    name = f"{org.id}-{report.as_of.isoformat()}-{report.run}-{path.name}"
    return FileResponse(path, media_type=media, filename=name)

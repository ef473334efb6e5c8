"""The analyst's upload (issue 43): a sheet checked at once, every problem shown in one pass.

Longer than ~400 lines: the upload's routes, its checks, the grid and the follow through the
night are one feature over one journal; split, each part would reach into the others' state.

``POST /orgs/{org}/upload`` takes one sheet (CSV, XLSX or Parquet) from a member whose role may
upload (analyst and above). It is read with the inbox's limits (size first, while it arrives;
then the readers' zip-bomb ratio and row bounds, formulas never evaluated) into a scratch folder
that is deleted after, and checked by the night's own checks: `fundpipe.submit.check_online`
reads the service (never writes it) for entities, contacts and instructions it knows and for
references that already exist there with other content. When the service cannot be read the
sheet is checked offline and the page says so.

The page then lists every problem (the row as Excel numbers it, the column as written and its
letter, the value, the reason) above a grid of the sheet with those cells marked. A valid
sheet goes into the organization's inbox — the local ``inbox/`` or ``FUNDPIPE_INBOX_URL`` —
under its own name, never over a file already there, processed or rejected, and never when
the same content was submitted before. Who uploaded it is kept in the desk's upload journal
(``<data_dir>/desk/uploads/<org>.jsonl``), and ``/orgs/{org}/upload/{id}`` follows the file
through the night: waiting, taken by a worker, processed (its distributions), or rejected
(why, from its error report).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, File, HTTPException, Request, UploadFile
from fastapi.responses import RedirectResponse, Response

from fundpipe.cents import format_cents
from fundpipe.desk._close import when
from fundpipe.desk._members import Right
from fundpipe.desk._reading import DeskOrg
from fundpipe.desk._session import Person
from fundpipe.desk._web import MEMBER, MemberOrg, SignedIn, page, require, state_of
from fundpipe.errors import ConfigurationError, InternalError, as_fundpipe_error
from fundpipe.keys import file_hash
from fundpipe.reconcile import report_problems
from fundpipe.sheets.frames import MiB, ReadLimits
from fundpipe.submit import SHEET_SUFFIXES, InboxDirs, sanitize_name
from fundpipe.validate import FileReport, Issue, column_letter

__all__ = ["RECENT_DAYS", "recent_uploads_of", "router"]

router = APIRouter()

#: How far back the morning lists a person's own uploads, with where each one is.
RECENT_DAYS = 3
#: rows of the sheet drawn in the grid (every problem is listed above it whatever the row)
GRID_ROWS = 200
_CHUNK = 1 * MiB


@dataclass(frozen=True)
class Upload:
    """One upload of the journal: what came, from whom, and what the check said."""

    id: str
    name: str
    file_hash: str
    size: int
    at: datetime
    by_name: str
    by_email: str
    identity: str
    rows: int
    distributions: int
    total_cents: int
    checked_online: bool

    def as_json(self) -> dict[str, Any]:
        """The journal's line."""
        return {
            "id": self.id,
            "name": self.name,
            "file_hash": self.file_hash,
            "size": self.size,
            "at": self.at.isoformat(),
            "by_name": self.by_name,
            "by_email": self.by_email,
            "identity": self.identity,
            "rows": self.rows,
            "distributions": self.distributions,
            "total_cents": self.total_cents,
            "checked_online": self.checked_online,
        }

    @classmethod
    def from_json(cls, line: dict[str, Any]) -> Upload:
        """One journal line read back."""
        return cls(**(line | {"at": datetime.fromisoformat(line["at"])}))


@dataclass(frozen=True)
class Progress:
    """Where an uploaded file is in the night."""

    state: str  # waiting | taken | processed | rejected | conflict | gone
    words: str
    distributions: list[tuple[str, str, int, int]] = field(default_factory=list)
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class GridCell:
    """One cell of the grid: its text, and the problems that name it."""

    text: str
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class Grid:
    """A sheet drawn as Excel shows it: column letters, the header row (1), then the rows."""

    sheet: str | None
    letters: list[str]
    rows: list[tuple[int, list[GridCell]]]
    more_rows: int


def _journal(request: Request, org: DeskOrg) -> Path:
    return state_of(request).desk.folder / "uploads" / f"{org.id}.jsonl"


def _uploads(request: Request, org: DeskOrg) -> list[Upload]:
    """The organization's uploads, newest first."""
    path = _journal(request, org)
    if not path.is_file():
        return []
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [Upload.from_json(line) for line in reversed(lines)]


def recent_uploads_of(request: Request, org: DeskOrg, email: str) -> list[tuple[Upload, Progress]]:
    """The uploads `email` made to `org` in the last RECENT_DAYS days (the desk's clock), newest
    first, each with where it is in the night: what the morning shows an analyst."""
    since = state_of(request).desk.clock() - timedelta(days=RECENT_DAYS)
    mine = [u for u in _uploads(request, org) if u.by_email == email and u.at >= since]
    return list(zip(mine, progresses_of(org, mine), strict=True))


def _inbox_url(org: DeskOrg) -> str | None:
    template = org.settings.pipeline.inbox_url
    return None if template is None else template.replace("{org}", org.id)


def _names_taken(org: DeskOrg) -> dict[str, str]:
    """Names already in the inbox and the folders beside it → where (never written over)."""
    taken: dict[str, str] = {}
    url = _inbox_url(org)
    if url is not None:
        from fundpipe.submit import BucketInbox

        bucket = BucketInbox(url)
        for where in ("rejected", "processed", "processing"):
            try:
                found = bucket.fs.find(bucket.where(where), refresh=True)
            except (OSError, FileNotFoundError):
                found = []
            taken |= {str(p).rsplit("/", 1)[-1]: where for p in found}
        taken |= dict.fromkeys(bucket.listing(), "inbox")
        return taken
    dirs = InboxDirs(org.settings.local.data_dir)
    for where, folder in (
        ("rejected", dirs.rejected),
        ("processed", dirs.processed),
        ("processing", dirs.processing),
        ("inbox", dirs.inbox),
    ):
        if folder.is_dir():
            taken |= {p.name: where for p in folder.iterdir()}
    return taken


def _ledger_rows(org: DeskOrg, hashes: Iterable[str]) -> dict[str, tuple[str, str]]:
    """file hash → (state, source file) in the organization's warehouse (its ledger's copy)."""
    from fundpipe.warehouse import Warehouse

    wanted = list(dict.fromkeys(hashes))
    if not wanted or not org.warehouse_file.exists():
        return {}
    with Warehouse(org.warehouse_file).read() as con:
        rows = con.execute(
            "SELECT file_hash, state, source_file FROM ledger_files "
            "WHERE file_hash IN (SELECT unnest(?))",
            [wanted],
        ).fetchall()
    return {str(h): (str(s), str(f)) for h, s, f in rows}


def _receive(sheet: UploadFile, into: Path, limit: int) -> int:
    """Write the upload to ``into``, refusing (413) past ``limit`` bytes before reading on."""
    size = 0
    with open(into, "wb") as out:
        while chunk := sheet.file.read(_CHUNK):
            size += len(chunk)
            if size > limit:
                raise HTTPException(
                    413,
                    f"The file is over the inbox's {limit / MiB:.0f} MiB limit: split it into "
                    "smaller files.",
                )
            out.write(chunk)
    return size


def _checked(request: Request, org: DeskOrg, path: Path) -> tuple[FileReport, list[str], bool]:
    """The night's checks on ``path``, online (the service read, never written) when it can
    be read; else offline, with a warning saying what was not checked."""
    from fundpipe.submit import check_online

    desk = state_of(request).desk
    try:
        if desk.service is None:
            raise ConfigurationError("the desk was started without a service to read")
        with desk.service(desk.settings, org.id) as live:
            checked = check_online(live, [path])
        return checked.reports[0], list(checked.warnings), True
    except Exception as exc:  # the service unreachable or refusing: say so, check offline
        error = as_fundpipe_error(exc)
        if isinstance(error, InternalError):
            raise  # a bug is the desk's fault page, not an offline check
        from fundpipe.validate import validate_files

        report = validate_files([path], date_order=org.settings.pipeline.date_order)[0]
        said = (
            f"The service could not be read ({error}): the sheet was checked offline only. "
            "Entities, contacts and references the service knows are checked by the night."
        )
        return report, [said], False


def _grid(path: Path, issues: list[Issue]) -> list[Grid]:
    """Each sheet of ``path`` as a grid with the cells ``issues`` name marked."""
    from fundpipe.sheets.readers import read_file

    marks: dict[tuple[str | None, int, str], list[str]] = {}
    for issue in issues:
        if issue.row is not None and issue.letter:
            key = (issue.sheet, issue.row, issue.letter)
            marks.setdefault(key, []).append(issue.reason)
    grids = []
    for raw in read_file(path).sheets:
        letters = [column_letter(i) for i in range(len(raw.header))]
        header = [
            GridCell(str(h), tuple(marks.get((raw.name, 1, letters[i]), ())))
            for i, h in enumerate(raw.header)
        ]
        rows: list[tuple[int, list[GridCell]]] = [(1, header)]
        body = raw.body
        for excel_row, values in zip(
            body.index[:GRID_ROWS], body.to_numpy()[:GRID_ROWS], strict=True
        ):
            cells = [
                GridCell(
                    "" if v is None or v != v else str(v),
                    tuple(marks.get((raw.name, int(excel_row), letters[i]), ())),
                )
                for i, v in enumerate(values)
            ]
            rows.append((int(excel_row), cells))
        grids.append(Grid(raw.name, letters, rows, max(len(body) - GRID_ROWS, 0)))
    return grids


def _into_inbox(org: DeskOrg, path: Path, name: str) -> str:
    """Put the checked sheet in the organization's inbox under ``name`` (never over a file:
    the name was checked free); returns where, as the night will find it."""
    url = _inbox_url(org)
    if url is not None:
        from fundpipe.submit import BucketInbox

        bucket = BucketInbox(url)
        target = f"{bucket.inbox}/{name}"
        bucket.fs.put_file(str(path), target)
        return f"{url}/{name}"
    inbox = InboxDirs(org.settings.local.data_dir).inbox
    inbox.mkdir(parents=True, exist_ok=True)
    partial = inbox / f".{name}.{uuid.uuid4().hex}.part"  # the night leaves .part names alone
    shutil.copyfile(path, partial)
    partial.rename(inbox / name)
    return str(inbox / name)


def _record(request: Request, org: DeskOrg, upload: Upload) -> None:
    path = _journal(request, org)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(upload.as_json()) + "\n")


def _page(
    request: Request, org: DeskOrg, person: Person, status: int = 200, **context: Any
) -> Response:
    listed = _uploads(request, org)[:20]
    return page(
        request,
        "upload.html",
        status,
        org=org,
        uploads=list(zip(listed, progresses_of(org, listed), strict=True)),
        when=when,
        format_cents=format_cents,
        **context,
    )


@router.get("/orgs/{org_id}/upload", openapi_extra=MEMBER, summary="Upload a sheet")
def upload_page(request: Request, org: MemberOrg, person: SignedIn) -> Response:
    """The upload form, and the organization's recent uploads with where each one is."""
    require(request, person, org, Right.UPLOAD, "upload a sheet")
    return _page(request, org, person)


@router.post("/orgs/{org_id}/upload", openapi_extra=MEMBER, summary="Check and drop a sheet")
def upload_sheet(
    request: Request,
    org: MemberOrg,
    person: SignedIn,
    sheet: Annotated[UploadFile, File(description="The sheet: CSV, XLSX or Parquet.")],
) -> Response:
    """Check the sheet as the night would (online when the service can be read) and show every
    problem at once; a valid sheet goes into the inbox, recorded as the signed-in person's."""
    require(request, person, org, Right.UPLOAD, "upload a sheet")
    state = state_of(request)
    name = sanitize_name(sheet.filename or "sheet")
    if Path(name).suffix.lower() not in SHEET_SUFFIXES:
        return _page(
            request,
            org,
            person,
            400,
            refusal=f"{name}: not a sheet fundpipe reads (CSV, XLSX or Parquet).",
        )
    with tempfile.TemporaryDirectory(prefix="fundpipe-upload-") as scratch:
        path = Path(scratch) / name
        size = _receive(sheet, path, ReadLimits().max_file_bytes)
        content = file_hash(path)
        known = _ledger_rows(org, [content]).get(content)
        if known is not None and known[0] in {"processed", "processing"}:
            earlier = Path(known[1].replace("\\", "/")).name
            return _page(
                request,
                org,
                person,
                409,
                refusal=f"{name}: this content was submitted already, as {earlier} "
                f"({known[0]}). Nothing was dropped.",
            )
        taken = _names_taken(org).get(name)
        if taken is not None:
            return _page(
                request,
                org,
                person,
                409,
                refusal=f"{name}: a file of this name is {taken_words(taken)}; a processed "
                "file is never written over. Rename the sheet and upload it again.",
            )
        report, warnings, online = _checked(request, org, path)
        grids = _grid(path, report.errors + report.warnings)
        if not report.valid:
            state.log.event(
                "upload_refused",
                email=person.email,
                org=org.id,
                path=request.url.path,
                detail=f"{name}: {len(report.errors)} problems",
            )
            return _page(
                request,
                org,
                person,
                422,
                checked=report,
                sheet_name=name,
                grids=grids,
                warnings=warnings,
                online=online,
            )
        dropped = _into_inbox(org, path, name)
    frame = report.distributions
    total = 0 if frame is None else int(frame["amount_cents"].sum())
    distributions = 0 if frame is None else int(frame["external_reference"].nunique())
    upload = Upload(
        id=uuid.uuid4().hex[:12],
        name=name,
        file_hash=content,
        size=size,
        at=state.desk.clock().astimezone(UTC),
        by_name=person.name,
        by_email=person.email,
        identity=person.identity,
        rows=report.rows,
        distributions=distributions,
        total_cents=total,
        checked_online=online,
    )
    _record(request, org, upload)
    state.log.event(
        "uploaded", email=person.email, org=org.id, path=request.url.path, detail=dropped
    )
    return RedirectResponse(
        f"/orgs/{quote(org.id)}/upload/{upload.id}?done=uploaded", status_code=303
    )


def taken_words(where: str) -> str:
    """Where a name is taken, in words."""
    return {
        "inbox": "already waiting in the inbox",
        "processing": "being processed",
        "processed": "already processed",
        "rejected": "in rejected/ (a rejected file keeps its name there)",
    }[where]


def progress_of(org: DeskOrg, upload: Upload) -> Progress:
    """Where ``upload`` is now: the warehouse's ledger says processed, rejected or in
    conflict; else the inbox says whether it still waits or a worker took it."""
    return progresses_of(org, [upload])[0]


def progresses_of(org: DeskOrg, uploads: Sequence[Upload]) -> list[Progress]:
    """Where each of ``uploads`` is now, as :func:`progress_of` says it: the ledger read once
    for them all, and the inbox and the folders beside it listed once, when one is needed."""
    ledger = _ledger_rows(org, [u.file_hash for u in uploads])
    taken: dict[str, str] | None = None
    found = []
    for upload in uploads:
        known = ledger.get(upload.file_hash)
        if known is None or known[0] not in {"rejected", "conflict", "processed"}:
            taken = _names_taken(org) if taken is None else taken
        found.append(_progress(org, upload, known, taken))
    return found


def _progress(
    org: DeskOrg,
    upload: Upload,
    known: tuple[str, str] | None,
    taken: Mapping[str, str] | None,
) -> Progress:
    if known is not None and known[0] in {"rejected", "conflict"}:
        problems, more = _rejected_problems(org, upload.name)
        tail = (f"and {more} more in its error report",) if more else ()
        words = (
            "In conflict: it changes distributions already at the service (see the "
            "exception queue)."
            if known[0] == "conflict"
            else "Rejected by the night."
        )
        return Progress(known[0], words, problems=problems + tail)
    if known is not None and known[0] == "processed":
        return Progress("processed", "Processed by the night.", _distributions(org, upload))
    where = (taken or {}).get(upload.name)
    if where == "inbox":
        return Progress("waiting", "Waiting in the inbox for the next night (or the watcher).")
    if where == "processing" or known is not None:
        return Progress("taken", "A worker has taken it; it is being processed.")
    return Progress("gone", "No longer in the inbox, and not yet in the ledger the desk reads.")


def _rejected_problems(org: DeskOrg, name: str) -> tuple[tuple[str, ...], int]:
    """The first problems of the file's error report: in the local ``rejected/``, else beside
    the rejected file on the inbox's storage."""
    report = InboxDirs(org.settings.local.data_dir).rejected / f"{name}.errors.csv"
    if report.is_file():
        return report_problems(report)
    url = _inbox_url(org)
    if url is None:
        return (), 0
    from fundpipe.submit import BucketInbox

    bucket = BucketInbox(url)
    with tempfile.TemporaryDirectory(prefix="fundpipe-report-") as scratch:
        local = Path(scratch) / "errors.csv"
        try:
            bucket.fs.get_file(f"{bucket.where('rejected')}/{name}.errors.csv", str(local))
        except (OSError, FileNotFoundError):
            return (), 0
        return report_problems(local)


def _distributions(org: DeskOrg, upload: Upload) -> list[tuple[str, str, int, int]]:
    """(name, service id, payments, total cents) of each distribution the file created."""
    from fundpipe.warehouse import Warehouse

    with Warehouse(org.warehouse_file).read() as con:
        rows = con.execute(
            "SELECT any_value(distribution_name), distribution_id, count(*), "
            "sum(amount_cents) FROM ledger_payments WHERE file_hash = ? "
            "GROUP BY distribution_id ORDER BY 1",
            [upload.file_hash],
        ).fetchall()
    return [(str(n), str(i or ""), int(c), int(t or 0)) for n, i, c, t in rows]


@router.get(
    "/orgs/{org_id}/upload/{upload_id}", openapi_extra=MEMBER, summary="One upload, followed"
)
def upload_one(request: Request, org: MemberOrg, person: SignedIn, upload_id: str) -> Response:
    """One upload: who dropped it and when, what it holds, and where it is in the night."""
    for upload in _uploads(request, org):
        if upload.id == upload_id:
            break
    else:
        raise HTTPException(404, "No such upload.")
    return page(
        request,
        "upload_one.html",
        org=org,
        upload=upload,
        progress=progress_of(org, upload),
        done=request.query_params.get("done"),
        when=when,
        format_cents=format_cents,
    )

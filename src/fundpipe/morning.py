"""The morning view across organizations: one workbook and one Parquet file, built by the
parent `nightly` run from what each organization's night published to the shared reports
location (`fundpipe.reports.publish`), for a controller who has neither worker's disk.

One row per organization (:data:`COLUMNS`): its state, files, rejected files, distributions
submitted and their total, the funding position from its ``funding.parquet`` (depository
available, open obligations, shortfall), the Total row of its distribution tie-out from its
``distribution_tieout.parquet`` (sheet and service dollars, disbursed, failed, cancelled,
outstanding, and whether it ties), its open exceptions, and a link to its workbook; and
one sheet of every organization's open exceptions (organization, id, what, amount, what to do).
An organization whose night published nothing is a row saying so (its state and message from
the run), never a row of zeros that looks like a quiet night.

Written to ``<FUNDPIPE_REPORTS_URL>/morning/<as_of>/morning.xlsx`` and ``morning.parquet``
(money in integer cents in the Parquet file, dollars in the workbook).

What a night publishes for the morning view crosses machines: it is :class:`PublishedNight`, a
versioned, frozen record with one writer (:meth:`PublishedNight.as_json`, published as the
night's ``night.json``) and one reader (:meth:`PublishedNight.read`). A record of another
version, or one missing a field, is an error naming the file — never a silent 0. Its exceptions
are the one exception record (`fundpipe.vocabulary.ExceptionRecord`, its ``published`` form).

It sits above the nights it reads (`fundpipe.nights`: an organization's night, its row), beside
them at the top of the library: `fundpipe.reports` below writes each night's reports and
publishes them (`fundpipe.reports.publish`), and knows nothing of the night over every
organization.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fundpipe.cents import format_cents
from fundpipe.errors import InputError
from fundpipe.reports import NIGHT, join, read_json
from fundpipe.vocabulary import ExceptionRecord, ExceptionState
from fundpipe.words import counted

if TYPE_CHECKING:
    from fundpipe.nights import OrgNight, OrgRow

__all__ = [
    "COLUMNS",
    "NIGHT_RECORD_VERSION",
    "TIEOUT",
    "MorningFiles",
    "MorningView",
    "PublishedNight",
    "build_morning_view",
    "write_morning_view",
]

#: The version of :class:`PublishedNight` this fundpipe writes and reads.
NIGHT_RECORD_VERSION = 1

#: The distribution tie-out's Total row, as the morning view's columns (integer cents).
TIEOUT = (
    "tieout_sheet_cents",
    "tieout_service_cents",
    "tieout_disbursed_cents",
    "tieout_failed_cents",
    "tieout_cancelled_cents",
    "tieout_outstanding_cents",
)
#: The morning view's columns, in order (money in integer cents).
COLUMNS = (
    "organization",
    "name",
    "state",
    "files",
    "rejected_files",
    "distributions",
    "submitted_cents",
    "available_cents",
    "obligations_cents",
    "shortfall_cents",
    *TIEOUT,
    "ties",
    "open_exceptions",
    "report",
)
#: The workbook's headers for :data:`COLUMNS` (money in dollars there).
HEADERS = (
    "Organization",
    "Name",
    "Night",
    "Files",
    "Rejected files",
    "Distributions",
    "Submitted ($)",
    "Depository available ($)",
    "Open obligations ($)",
    "Shortfall ($)",
    "Tie-out: sheet ($)",
    "Tie-out: service ($)",
    "Tie-out: disbursed ($)",
    "Tie-out: failed ($)",
    "Tie-out: cancelled ($)",
    "Tie-out: outstanding ($)",
    "Ties out",
    "Open exceptions",
    "Report",
)
EXCEPTION_HEADERS = ("Organization", "Exception", "What", "Amount", "What to do")


def _field(data: Mapping[str, Any], name: str, kind: type, where: str) -> Any:
    """``data[name]`` as ``kind``; missing or of another type: an error naming ``where``."""
    if name not in data:
        raise InputError(f"{where}: the published night has no field {name!r}")
    value = data[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise InputError(
            f"{where}: field {name!r} of the published night is {value!r}, not {kind.__name__}"
        )
    return value


#: The fields of a published exception (`ExceptionRecord`'s ``published`` JSON form).
_EXCEPTION_FIELDS = ("id", "state", "what", "amount", "what_to_do")


def _published_exception(data: Mapping[str, Any], where: str) -> ExceptionRecord:
    """Read one exception of the record (an error naming ``where`` when a field lacks, is not
    text, or its amount is not dollars)."""
    for name in _EXCEPTION_FIELDS:
        _field(data, name, str, where)
    try:
        return ExceptionRecord.from_json({name: data[name] for name in _EXCEPTION_FIELDS})
    except ValueError as error:
        raise InputError(f"{where}: an exception of the published night: {error}") from None


@dataclass(frozen=True, slots=True)
class PublishedNight:
    """What one organization's night publishes for the morning view (its ``night.json``)."""

    organization: str
    name: str
    as_of: str
    files: int
    rejected_files: tuple[str, ...]
    distributions: int
    submitted_cents: int
    #: each in the published form alone (id, state, what, amount, what to do)
    exceptions: tuple[ExceptionRecord, ...]
    version: int = NIGHT_RECORD_VERSION

    @classmethod
    def of(cls, organization: str, name: str, night: OrgNight) -> PublishedNight:
        """The record of one organization's night (the child run writes it)."""
        from pathlib import Path

        processed = night.in_state("processed")
        return cls(
            organization=organization,
            name=name,
            as_of=night.as_of.isoformat(),
            files=len(night.files),
            rejected_files=tuple(Path(f.source_file).name for f in night.rejected),
            distributions=sum(f.distributions for f in processed),
            submitted_cents=sum(f.total_cents for f in processed),
            exceptions=tuple(
                ExceptionRecord.from_json(e.as_json("published")) for e in night.exceptions
            ),
        )

    @property
    def open_exceptions(self) -> tuple[ExceptionRecord, ...]:
        """The exceptions still open after the night."""
        return tuple(e for e in self.exceptions if e.state == ExceptionState.OPEN)

    def as_json(self) -> dict[str, Any]:
        """The one writer: the record as published (``night.json``)."""
        return {
            "version": self.version,
            "organization": self.organization,
            "name": self.name,
            "as_of": self.as_of,
            "files": self.files,
            "rejected_files": list(self.rejected_files),
            "distributions": self.distributions,
            "submitted_cents": self.submitted_cents,
            "exceptions": [e.as_json("published") for e in self.exceptions],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str) -> PublishedNight:
        """Read a record; another version or a missing field is an error naming ``where``."""
        version = data.get("version")
        if version != NIGHT_RECORD_VERSION:
            raise InputError(
                f"{where}: the published night is version {version!r}; this fundpipe reads "
                f"version {NIGHT_RECORD_VERSION} (publish the night again with this version)"
            )
        return cls(
            organization=_field(data, "organization", str, where),
            name=_field(data, "name", str, where),
            as_of=_field(data, "as_of", str, where),
            files=_field(data, "files", int, where),
            rejected_files=tuple(str(n) for n in _field(data, "rejected_files", list, where)),
            distributions=_field(data, "distributions", int, where),
            submitted_cents=_field(data, "submitted_cents", int, where),
            exceptions=tuple(
                _published_exception(e, where) for e in _field(data, "exceptions", list, where)
            ),
            version=version,
        )

    @classmethod
    def read(cls, folder: str) -> PublishedNight | None:
        """The one reader: the record published in ``folder`` (None: it published none)."""
        where = join(folder, NIGHT)
        data = read_json(where)
        return None if data is None else cls.from_json(data, where)


@dataclass(frozen=True, slots=True)
class MorningFiles:
    """Where the morning view was written: its workbook's and its Parquet file's URLs."""

    workbook: str
    parquet: str


@dataclass(frozen=True)
class MorningView:
    """The morning view: one row per organization, every open exception, and the totals."""

    as_of: str
    rows: list[dict[str, Any]]
    exceptions: list[dict[str, str]]

    @property
    def totals(self) -> dict[str, int]:
        """Sums of the rows' counts and cents (the workbook's last line)."""
        keys = (
            "files",
            "rejected_files",
            "distributions",
            "submitted_cents",
            "available_cents",
            "obligations_cents",
            "shortfall_cents",
            *TIEOUT,
            "open_exceptions",
        )
        return {k: sum(int(r[k] or 0) for r in self.rows) for k in keys}


def _funding(folder: str) -> dict[str, int]:
    """Depository available, open obligations and shortfall over the vehicles of a night."""
    import pandas as pd
    from fsspec.core import url_to_fs

    fs, path = url_to_fs(join(folder, "funding.parquet"))
    if not fs.exists(path):
        return {}
    with fs.open(path, "rb") as fh:
        frame = pd.read_parquet(fh)
    return {
        key: int(frame[key].sum()) if key in frame.columns else 0
        for key in ("available_cents", "obligations_cents", "shortfall_cents")
    }


def _tieout(folder: str) -> dict[str, Any]:
    """The Total row of a night's distribution tie-out (its dollars, and whether it ties);
    no tie-out published: ``ties`` is None and the dollars 0."""
    import pandas as pd
    from fsspec.core import url_to_fs

    fs, path = url_to_fs(join(folder, "distribution_tieout.parquet"))
    if not fs.exists(path):
        return {"ties": None}
    with fs.open(path, "rb") as fh:
        frame = pd.read_parquet(fh)
    total = frame[frame["is_total"].astype(bool)]
    if total.empty:
        return {"ties": None}
    row = total.iloc[0]
    out: dict[str, Any] = {
        key: int(row[key.removeprefix("tieout_")] or 0)
        for key in TIEOUT
        if key.removeprefix("tieout_") in total.columns
    }
    out["ties"] = bool(row["ties"])
    return out


def build_morning_view(as_of: str, nights: Sequence[OrgRow]) -> MorningView:
    """Read each organization's published night (`PublishedNight.read`, from the folder its
    row names) and put them side by side."""
    rows: list[dict[str, Any]] = []
    exceptions: list[dict[str, str]] = []
    for night in nights:
        folder = night.report_folder
        record = PublishedNight.read(folder) if folder else None
        row: dict[str, Any] = dict.fromkeys(COLUMNS, 0)
        row.update(organization=night.organization, name=night.name, state=night.state, ties=None)
        if record is None:
            why = night.message or "its night published no reports"
            row.update(state=f"{night.state}: {why}", report="")
            rows.append(row)
            continue
        opened = record.open_exceptions
        row.update(
            files=record.files,
            rejected_files=len(record.rejected_files),
            distributions=record.distributions,
            submitted_cents=record.submitted_cents,
            open_exceptions=len(opened),
            report=join(folder, "reconciliation.xlsx"),
            **_funding(folder),
            **_tieout(folder),
        )
        rows.append(row)
        exceptions += [
            {
                "organization": night.organization,
                "id": e.id,
                "what": e.what,
                "amount": e.amount,
                "what_to_do": e.what_to_do,
            }
            for e in opened
        ]
    return MorningView(as_of=as_of, rows=rows, exceptions=exceptions)


def _workbook(view: MorningView) -> bytes:
    import xlsxwriter

    buffer = io.BytesIO()
    book = xlsxwriter.Workbook(buffer, {"in_memory": True})
    bold = book.add_format({"bold": True})
    money = book.add_format({"num_format": "#,##0.00"})
    sheet = book.add_worksheet("Organizations")
    sheet.write_row(0, 0, HEADERS, bold)
    for r, row in enumerate(view.rows, start=1):
        for c, key in enumerate(COLUMNS):
            value = row[key]
            if key.endswith("_cents"):
                sheet.write_number(r, c, int(value) / 100, money)
            elif key == "report" and value:
                # a formula keeps the link as published (xlsxwriter's own links rewrite a
                # POSIX path the Windows way and refuse s3:// and other fsspec schemes)
                target = str(value).replace('"', '""')
                sheet.write_formula(r, c, f'=HYPERLINK("{target}","workbook")', None, "workbook")
            elif key == "ties":
                sheet.write(r, c, {True: "yes", False: "no"}.get(value, ""))
            else:
                sheet.write(r, c, value)
    last = len(view.rows) + 1
    sheet.write(last, 0, f"All {len(view.rows)}", bold)
    for c, key in enumerate(COLUMNS):
        if key in view.totals:
            total = view.totals[key]
            if key.endswith("_cents"):
                sheet.write_number(last, c, total / 100, money)
            else:
                sheet.write_number(last, c, total)
    tied = [r["ties"] for r in view.rows if r["ties"] is not None]
    if tied:  # every organization's tie-out ties, or not
        sheet.write(last, COLUMNS.index("ties"), "yes" if all(tied) else "no", bold)
    sheet.set_column(0, len(COLUMNS) - 1, 16)
    sheet.freeze_panes(1, 0)
    open_sheet = book.add_worksheet("Open exceptions")
    open_sheet.write_row(0, 0, EXCEPTION_HEADERS, bold)
    for r, e in enumerate(view.exceptions, start=1):
        open_sheet.write_row(
            r, 0, [e["organization"], e["id"], e["what"], e["amount"], e["what_to_do"]]
        )
    open_sheet.set_column(0, 4, 22)
    book.close()
    return buffer.getvalue()


def _parquet(view: MorningView) -> bytes:
    import pandas as pd

    frame = pd.DataFrame(view.rows, columns=list(COLUMNS))
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def write_morning_view(reports_url: str, view: MorningView) -> MorningFiles:
    """Write the morning view's workbook and Parquet file under ``reports_url``; their URLs."""
    from fsspec.core import url_to_fs

    folder = join(reports_url, "morning", view.as_of)
    fs, root = url_to_fs(folder)
    fs.makedirs(root, exist_ok=True)
    for name, data in (("morning.xlsx", _workbook(view)), ("morning.parquet", _parquet(view))):
        with fs.open(join(root, name), "wb") as fh:
            fh.write(data)
    return MorningFiles(
        workbook=join(folder, "morning.xlsx"), parquet=join(folder, "morning.parquet")
    )


def describe(view: MorningView) -> str:
    """The morning view's totals in one line (for the parent run's log)."""
    t = view.totals
    short = t["shortfall_cents"]
    return (
        f"morning view: {counted(len(view.rows), 'organization')}, "
        f"{counted(t['distributions'], 'distribution')} ({format_cents(t['submitted_cents'])}), "
        + (f"shortfall {format_cents(short)}, " if short else "no shortfall, ")
        + counted(t["open_exceptions"], "open exception")
    )

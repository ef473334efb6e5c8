"""The JSON edges of the steps' typed results: the `--json` output of `fundpipe ingest`,
`sync`, `reconcile` and `validate`, and the results of the one-step Prefect flows.

Every function here takes a result object of `ingest`, `sync`, `reconcile` or `validate` and
returns a JSON-ready dict (money as integer cents). Nothing else reads these dicts: the log
lines, events, artifacts and the run summary read the typed results (`fundpipe.night`,
`fundpipe.nights`).
"""

from __future__ import annotations

from dataclasses import asdict, is_dataclass
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fundpipe.reconcile import ReconcileResult
    from fundpipe.submit import FileOutcome, IngestResult
    from fundpipe.sync import SyncResult
    from fundpipe.validate import FileReport


def _plain(value: Any) -> Any:
    """Dataclasses, paths and dates → JSON-ready values."""
    if is_dataclass(value) and not isinstance(value, type):
        return {k: _plain(v) for k, v in asdict(value).items()}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)  # dollars as exact text; never a float
    return value


def file_dict(outcome: FileOutcome) -> dict[str, Any]:
    """One file's outcome (its one JSON form: `fundpipe.nights.file_json`)."""
    from fundpipe.nights import file_json

    return file_json(outcome)


def ingest_dict(result: IngestResult) -> dict[str, Any]:
    """One ingest's files and their outcomes."""
    files = [file_dict(outcome) for outcome in result.files]
    return {
        "dry_run": result.dry_run,
        "exit_code": result.exit_code,
        "files": files,
        "warnings": list(result.warnings),
        "notes": list(result.notes),
        "livemode": result.livemode,
        "left_alone": [{"name": e.name, "reason": e.reason} for e in result.left_alone],
    }


def sync_dict(result: SyncResult) -> dict[str, Any]:
    """What a sync pulled."""
    out: dict[str, Any] = _plain(result)
    return out


def reconcile_dict(result: ReconcileResult) -> dict[str, Any]:
    """A reconciliation's summary, report paths and exception rows (for the artifact table)."""
    summary = result.summary
    out: dict[str, Any] = {
        "summary": _plain(summary),
        "exceptions": summary.exceptions,
        "out_dir": str(result.out_dir),
        "workbook": str(result.workbook),
        "parquet": {name: str(path) for name, path in result.parquet.items()},
        "rows": dict(result.rows),
        "unchanged": result.unchanged,
    }
    exceptions_path = result.parquet.get("exceptions")
    rows: list[dict[str, Any]] = []
    if exceptions_path is not None and Path(exceptions_path).exists():
        frame = result.frame("exceptions").head(500)
        rows = [
            _plain(r) for r in frame.astype(object).where(frame.notna(), None).to_dict("records")
        ]
    out["exceptions_rows"] = rows
    if result.lifecycle is not None:
        life = result.lifecycle
        out["lifecycle"] = {
            "opened": [_plain(e.as_json("lifecycle")) for e in life.opened],
            "still_open": [_plain(e.as_json("lifecycle")) for e in life.still_open],
            "resolved": [_plain(e.as_json("lifecycle")) for e in life.resolved],
            "acknowledged": life.acknowledged,
        }
    return out


def validation_dict(reports: Sequence[FileReport]) -> dict[str, Any]:
    """``{"files": [{"file", "sheet", "valid", "rows", "errors", "warnings", "grouped"}]}``.

    ``errors``/``warnings``: one entry per cell (with ``row`` and ``column_letter``), for
    scripts; ``grouped``: what the error report and the table show, each identical problem once
    with its ``rows`` (a list), ``rows_text`` (``"2–7, 9"``), ``count`` and ``severity``.
    """
    from fundpipe.validate import group_issues

    return {
        "files": [
            {
                "file": r.file,
                "sheet": ", ".join(r.sheets) if r.sheets else None,
                "valid": r.valid,
                "rows": r.rows,
                "errors": [i.as_dict() for i in r.errors],
                "warnings": [i.as_dict() for i in r.warnings],
                "grouped": [g.as_dict() for g in group_issues(r)],
            }
            for r in reports
        ]
    }

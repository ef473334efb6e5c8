"""What one run did, as plain data: for the CLI, Prefect artifacts and `--json`.

Every function here takes the result objects of `ingest`, `sync` and `reconcile` and returns
JSON-ready dicts (money as integer cents plus a formatted dollars string), so flows persist
nothing but what they choose to show.
"""

from __future__ import annotations

from dataclasses import asdict, is_dataclass
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fundpipe.sheets.money import format_cents

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fundpipe.reconcile.views import ReconcileResult
    from fundpipe.submit.ingest import IngestResult
    from fundpipe.sync.pull import SyncResult
    from fundpipe.validate.issues import FileReport


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


def ingest_dict(result: IngestResult) -> dict[str, Any]:
    """One ingest's files and their outcomes."""
    files = []
    for outcome in result.files:
        files.append(
            {
                "file": outcome.source_file,
                "state": outcome.state,
                "rows": outcome.rows,
                "distributions": outcome.distributions,
                "total_cents": outcome.total_cents,
                "payment_states": dict(outcome.payment_states),
                "message": outcome.message,
                "moved_to": str(outcome.moved_to) if outcome.moved_to else None,
            }
        )
    return {"dry_run": result.dry_run, "exit_code": result.exit_code, "files": files}


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
    }
    exceptions_path = result.parquet.get("exceptions")
    rows: list[dict[str, Any]] = []
    if exceptions_path is not None and Path(exceptions_path).exists():
        frame = result.frame("exceptions").head(500)
        rows = [
            _plain(r) for r in frame.astype(object).where(frame.notna(), None).to_dict("records")
        ]
    out["exceptions_rows"] = rows
    return out


def build_summary(
    ingests: list[dict[str, Any]], synced: dict[str, Any], reconciled: dict[str, Any]
) -> dict[str, Any]:
    """The nightly run's summary from the per-step dicts above."""
    files = [f for result in ingests for f in result.get("files", [])]
    by_state: dict[str, int] = {}
    for f in files:
        by_state[f["state"]] = by_state.get(f["state"], 0) + 1
    # A file is counted once: new (processed now) or already submitted (a no-op), never both.
    accepted = [f for f in files if f["state"] == "processed"]
    created_cents = sum(f["total_cents"] for f in files if f["state"] == "processed")
    summary = reconciled.get("summary", {})
    facts: dict[str, Any] = {
        "files seen": len(files),
        "files processed (new)": len(accepted),
        "files rejected": by_state.get("rejected", 0),
        "files in conflict or refused": by_state.get("conflict", 0) + by_state.get("refused", 0),
        "files already submitted (no-op)": by_state.get("duplicate", 0),
        "distributions submitted": sum(
            f["distributions"] for f in files if f["state"] == "processed"
        ),
        "amount submitted": format_cents(created_cents),
        "accounts synced": synced.get("counts", {}).get("financial_accounts", 0),
        "distributions synced": synced.get("counts", {}).get("distributions", 0),
        "depository available": format_cents(summary.get("available_cents", 0)),
        "open obligations": format_cents(summary.get("obligations_cents", 0)),
        "shortfall": format_cents(summary.get("shortfall_cents", 0)),
        "exceptions": reconciled.get("exceptions", 0),
    }
    exit_code = max((r.get("exit_code", 0) for r in ingests), default=0)
    return {
        "as_of": summary.get("as_of"),
        "facts": facts,
        "files": files,
        "rejected_files": [
            {"file": f["file"], "report": f.get("moved_to"), "message": f.get("message")}
            for f in files
            if f["state"] == "rejected"
        ],
        "reports": {
            "workbook": reconciled.get("workbook"),
            **{f"parquet {k}": v for k, v in reconciled.get("parquet", {}).items()},
        },
        "exceptions": reconciled.get("exceptions", 0),
        "exception_counts": summary.get("exception_counts", {}),
        "exit_code": exit_code,
    }


def summary_markdown(summary: dict[str, Any]) -> str:
    """The run summary as the markdown of a Prefect artifact."""
    lines = [
        f"# fundpipe nightly run — {summary.get('as_of')}",
        "",
        "| what | value |",
        "|---|---|",
    ]
    lines += [f"| {k} | {v} |" for k, v in summary.get("facts", {}).items()]
    if summary.get("rejected_files"):
        lines += ["", "## Rejected files", ""]
        lines += [
            f"- `{item['file']}` — {item.get('message') or 'see its error report'}"
            for item in summary["rejected_files"]
        ]
    if summary.get("exception_counts"):
        lines += ["", "## Exceptions", "", "| kind | count |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in summary["exception_counts"].items()]
    lines += ["", "## Reports", ""]
    lines += [f"- {k}: `{v}`" for k, v in summary.get("reports", {}).items() if v]
    return "\n".join(lines) + "\n"


def validation_dict(reports: Sequence[FileReport]) -> dict[str, Any]:
    """``{"files": [{"file", "sheet", "valid", "rows", "errors": [...], "warnings": [...]}]}``."""
    return {
        "files": [
            {
                "file": r.file,
                "sheet": ", ".join(r.sheets) if r.sheets else None,
                "valid": r.valid,
                "rows": r.rows,
                "errors": [i.as_dict() for i in r.errors],
                "warnings": [i.as_dict() for i in r.warnings],
            }
            for r in reports
        ]
    }


def summary_of_run(state: Any) -> dict[str, Any]:
    """The summary of a finished nightly flow run (a Prefect state).

    A run that did not complete raises the fundpipe error its exit code stands for, with the
    state's message (fundpipe's plain sentence): the CLI prints it and exits with that code.
    """
    from fundpipe.errors import ExitCode, FundpipeError, InputError, LockHeld, ServiceUnavailable

    data = state.result(raise_on_failure=False) if state.data is not None else None
    if state.is_completed() and isinstance(data, dict):
        return data
    code = data.get("exit_code", ExitCode.SERVICE) if isinstance(data, dict) else ExitCode.SERVICE
    error: type[FundpipeError] = {
        ExitCode.USAGE: InputError,
        ExitCode.LOCKED: LockHeld,
    }.get(ExitCode(code), ServiceUnavailable)
    raise error(state.message or state.name)

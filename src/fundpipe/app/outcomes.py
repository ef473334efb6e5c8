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

from fundpipe.cents import format_cents

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fundpipe.night import NightResult
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
                "roster": dict(outcome.roster) if outcome.roster else None,
            }
        )
    return {
        "dry_run": result.dry_run,
        "exit_code": result.exit_code,
        "files": files,
        "warnings": list(result.warnings),
        "notes": list(result.notes),
        "livemode": result.livemode,
    }


def _mode(*seen: Any) -> str:
    """ "live", "test" or "not seen", from the steps' `livemode`."""
    values = [v for v in seen if v is not None]
    if not values:
        return "not seen"
    return "live" if any(values) else "test"


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
    if result.lifecycle is not None:
        life = result.lifecycle
        out["lifecycle"] = {
            "opened": [_plain(e.as_dict()) for e in life.opened],
            "still_open": [_plain(e.as_dict()) for e in life.still_open],
            "resolved": [_plain(e.as_dict()) for e in life.resolved],
            "acknowledged": life.acknowledged,
        }
    return out


def build_summary(night: NightResult) -> dict[str, Any]:
    """The night's summary (artifacts, `fundpipe run --json`, the CLI table), read from the
    typed night: every count is an attribute of `night`, never re-counted from dict keys."""
    ingested, synced, summary = night.ingest, night.sync, night.reconcile.summary
    warnings = list(ingested.warnings)
    warnings += [w for w in synced.warnings if w not in warnings]
    facts: dict[str, Any] = {
        "files seen": night.files_seen,
        # a file is counted once: new (processed now) or already submitted (a no-op), never both
        "files processed (new)": night.files_processed,
        "files rejected": night.files_rejected,
        "files in conflict or refused": len(night.in_state("conflict", "refused")),
        "files already submitted (no-op)": len(night.in_state("duplicate")),
        "distributions submitted": night.distributions_created,
        "amount submitted": format_cents(night.cents_created),
        "accounts synced": synced.counts.get("financial_accounts", 0),
        "distributions synced": synced.counts.get("distributions", 0),
        "depository available": format_cents(summary.available_cents),
        "open obligations": format_cents(summary.obligations_cents),
        "shortfall": format_cents(summary.shortfall_cents),
        "exceptions": summary.exceptions,
        "service objects": _mode(ingested.livemode, synced.livemode),
        "warnings": len(warnings),
    }
    return {
        "as_of": night.as_of.isoformat(),
        "facts": facts,
        "files": ingest_dict(ingested)["files"],
        "rejected_files": [
            {
                "file": f.source_file,
                "report": str(f.moved_to) if f.moved_to else None,
                "message": f.message,
            }
            for f in night.in_state("rejected")
        ],
        "reports": {
            "workbook": str(night.workbook),
            **{f"parquet {k}": str(v) for k, v in night.parquet.items()},
        },
        "exceptions": summary.exceptions,
        "exception_counts": dict(summary.exception_counts),
        "warnings": warnings,
        "notes": list(ingested.notes),
        "exit_code": int(night.exit_code),
    }


#: How the service objects' mode reads to a person.
_MODES = {"test": "test mode", "live": "live mode", "not seen": "none seen"}


def plain_fact(key: str, value: Any) -> tuple[str, str]:
    """A run fact as a person reads it: a capitalized label, and the service objects' mode in
    words ("Service objects", "test mode"), never the raw `livemode` label."""
    label = key[:1].upper() + key[1:]
    if key == "service objects":
        return label, _MODES.get(str(value), str(value))
    return label, str(value)


def summary_markdown(summary: dict[str, Any]) -> str:
    """The run summary as the markdown of a Prefect artifact."""
    org = f" — organization {summary['organization']}" if summary.get("organization") else ""
    lines = [
        f"# fundpipe nightly run — {summary.get('as_of')}{org}",
        "",
        "| what | value |",
        "|---|---|",
    ]
    lines += ["| {} | {} |".format(*plain_fact(k, v)) for k, v in summary.get("facts", {}).items()]
    if summary.get("rejected_files"):
        lines += ["", "## Rejected files", ""]
        lines += [
            f"- `{item['file']}` — {item.get('message') or 'see its error report'}"
            for item in summary["rejected_files"]
        ]
    if summary.get("warnings") or summary.get("notes"):
        lines += ["", "## Warnings and notes", ""]
        lines += [f"- {w}" for w in [*summary.get("warnings", []), *summary.get("notes", [])]]
    if summary.get("exception_counts"):
        lines += ["", "## Exceptions", "", "| kind | count |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in summary["exception_counts"].items()]
    lines += ["", "## Reports", ""]
    lines += [f"- {k}: `{v}`" for k, v in summary.get("reports", {}).items() if v]
    return "\n".join(lines) + "\n"


def validation_dict(reports: Sequence[FileReport]) -> dict[str, Any]:
    """``{"files": [{"file", "sheet", "valid", "rows", "errors", "warnings", "grouped"}]}``.

    ``errors``/``warnings``: one entry per cell (with ``row`` and ``column_letter``), for
    scripts; ``grouped``: what the error report and the table show, each identical problem once
    with its ``rows`` (a list), ``rows_text`` (``"2–7, 9"``), ``count`` and ``severity``.
    """
    from fundpipe.validate.issues import group_issues

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


def summary_of_run(state: Any) -> dict[str, Any]:
    """The summary of a finished nightly flow run (a Prefect state).

    The night over every organization (`fundpipe.app.prefect.fanout`) returns its summary even when an
    organization failed: its `exit_code` says so, and its rows say which and why.

    A run that did not complete raises the fundpipe error its exit code stands for, with the
    state's message (fundpipe's plain sentence): the CLI prints it and exits with that code.
    """
    from fundpipe.errors import (
        ExitCode,
        FundpipeError,
        InputError,
        InternalError,
        LockHeld,
        ServiceUnavailable,
    )

    data = state.result(raise_on_failure=False) if state.data is not None else None
    if isinstance(data, dict) and (state.is_completed() or "organizations" in data):
        # a night over several organizations tells each one's, even when one failed
        return data
    code = ExitCode.SERVICE
    if isinstance(data, dict):
        code = data.get("exit_code", ExitCode.SERVICE)
    elif isinstance(data, FundpipeError):
        code = data.exit_code
    error: type[FundpipeError] = {
        ExitCode.USAGE: InputError,
        ExitCode.LOCKED: LockHeld,
        ExitCode.INTERNAL: InternalError,
    }.get(ExitCode(code), ServiceUnavailable)
    raise error(state.message or state.name)


#: What a person does about each kind of exception, where the lifecycle gives no action.
_WHAT_TO_DO = {
    "shortfall": "fund the vehicle's depository account or move the payment date",
    "amount_mismatch": "compare the sheet with the service; correct whichever is wrong",
    "missing": "re-drop the file, or find out why the service lacks the payment",
    "extra": "find the sheet this payment came from, or cancel it at the service",
    "status_mismatch": "see why the payment failed or was cancelled, and pay it again if due",
    "unexplained_balance": "look for a movement of the account that no payment explains",
    "file_rejected": "correct the file from its error report and drop it again",
    "file_conflict": "decide which version stands: change it at the service, or drop the old one",
}


def exception_lines(reconciled: dict[str, Any]) -> list[dict[str, Any]]:
    """The night's exceptions in the plain columns of the exception lifecycle.

    Keys: ``id``, ``state`` (``open``, ``resolved`` or ``acknowledged``), ``age_days``,
    ``what``, ``amount`` (dollars), ``what_to_do``, ``kind``. Logs, events and the exceptions
    artifact read only this.

    The lines come from the exception lifecycle (`fundpipe.reconcile.lifecycle`): the ids it
    opened tonight (``opened_tonight``), those still open (aged), and those it resolved. Without
    a lifecycle (a reconcile result from before it), each row gets an id hashed from its kind
    and subject and counts as open.
    """
    import hashlib

    if "lifecycle" in reconciled:
        return _lifecycle_lines(reconciled["lifecycle"])
    lines = []
    for row in reconciled.get("exceptions_rows", []):
        kind = str(row.get("kind") or "exception")
        subject = str(row.get("object_id") or row.get("source_file") or row.get("vehicle") or "")
        digest = hashlib.sha256(f"{kind}|{row.get('object_type')}|{subject}".encode()).hexdigest()
        where = row.get("source_file") or row.get("vehicle") or subject
        reason, label = str(row.get("reason") or ""), kind.replace("_", " ")
        what = reason if reason.startswith(label) else f"{label}: {reason}".strip(": ")
        if where:
            what = f"{what} ({Path(str(where)).name})"
        lines.append(
            {
                "id": f"exc_{digest[:10]}",
                "state": "open",
                "age_days": 0,
                "what": what,
                "amount": format_cents(int(row.get("amount_cents") or 0)),
                "what_to_do": _WHAT_TO_DO.get(kind, "look into it and decide"),
                "kind": kind,
            }
        )
    return lines


def _lifecycle_lines(lifecycle: dict[str, Any]) -> list[dict[str, Any]]:
    """`exception_lines` from the lifecycle's records (see `reconcile_dict`)."""
    lines = []
    for group in ("opened", "still_open", "resolved"):
        for record in lifecycle.get(group, []):
            kind = str(record.get("kind") or "exception")
            cents = record.get("amount_cents")
            lines.append(
                {
                    "id": record["id"],
                    "state": record["state"],
                    "age_days": int(record.get("age_days") or 0),
                    "what": record.get("what") or kind.replace("_", " "),
                    "amount": format_cents(int(cents)) if cents is not None else "",
                    "what_to_do": record.get("action")
                    or _WHAT_TO_DO.get(kind, "look into it and decide"),
                    "kind": kind,
                    "opened_tonight": group == "opened",
                }
            )
    return lines

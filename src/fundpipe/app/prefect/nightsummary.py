"""The night over every organization, as plain data: one row per organization (files,
distributions, totals, open exceptions, state, a link to its child run) and the totals, for the
parent run's artifact, its state and the CLI (`fundpipe.app.prefect.fanout`).

The totals are the sums of the rows: `total_cents` is what every organization's processed files
asked for together.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import State

from fundpipe.cents import format_cents
from fundpipe.config import Organization

__all__ = ["cross_markdown", "cross_summary", "org_row", "run_link"]


def org_row(
    org: Organization, state: State[Any] | None, summary: dict[str, Any] | None
) -> dict[str, Any]:
    """One organization's row of the cross-organization summary."""
    summary = summary or {}
    files = summary.get("files", [])
    cents = sum(int(f.get("total_cents") or 0) for f in files if f["state"] == "processed")
    return {
        "organization": org.folder,
        "name": org.name or "",
        "state": state.type.value.title() if state is not None else "Failed",
        "files": len(files),
        "rejected": sum(1 for f in files if f["state"] == "rejected"),
        "distributions": sum(
            int(f.get("distributions") or 0) for f in files if f["state"] == "processed"
        ),
        "total_cents": cents,
        "total": format_cents(cents),
        "open_exceptions": int(summary.get("open_exceptions", 0)),
        "exit_code": int(summary.get("exit_code", 0)),
        "message": (state.message if state is not None else None) or "",
        "run": "",
        "as_of": summary.get("as_of") or "",
        # where its night was published (FUNDPIPE_REPORTS_URL), for the morning view
        "report_folder": (summary.get("published") or {}).get("folder") or "",
        # what needs a person, for the parent's message
        "rejected_names": ", ".join(
            Path(str(f["file"])).name for f in summary.get("rejected_files", [])
        ),
        "new_exceptions": ", ".join(summary.get("opened_ids", [])),
        "summary": summary or None,
    }


def run_link(flow_run_id: Any) -> str:
    """The Prefect UI page of a flow run (`PREFECT_UI_URL`), else the run's id."""
    from prefect.settings import PREFECT_UI_URL

    ui = PREFECT_UI_URL.value()
    return f"{ui.rstrip('/')}/runs/flow-run/{flow_run_id}" if ui else str(flow_run_id)


def cross_summary(rows: list[dict[str, Any]], as_of: str | None) -> dict[str, Any]:
    """The night over every organization: each one's row, the totals, and the combined facts."""
    children = [r.get("summary") or {} for r in rows]
    cents = sum(int(r["total_cents"]) for r in rows)
    return {
        "as_of": as_of
        or next((c.get("as_of") for c in [*children, *rows] if c.get("as_of")), None),
        "organizations": {r["organization"]: r for r in rows},
        "totals": {
            "organizations": len(rows),
            "failed": sum(1 for r in rows if r["state"] != "Completed"),
            "files": sum(int(r["files"]) for r in rows),
            "rejected": sum(int(r["rejected"]) for r in rows),
            "distributions": sum(int(r["distributions"]) for r in rows),
            "total_cents": cents,
            "total": format_cents(cents),
            "open_exceptions": sum(int(r["open_exceptions"]) for r in rows),
        },
        "rejected_files": [
            {**item, "organization": r["organization"]}
            for r in rows
            for item in (r.get("summary") or {}).get("rejected_files", [])
        ],
        "warnings": [
            f"{r['organization']}: {w}"
            for r in rows
            for w in (r.get("summary") or {}).get("warnings", [])
        ],
        "exit_code": max((int(r["exit_code"]) for r in rows), default=0),
    }


def cross_markdown(summary: dict[str, Any]) -> str:
    """The parent run's artifact: one row per organization, and the totals."""
    lines = [
        f"# fundpipe nightly run — {summary.get('as_of')} — every organization",
        "",
        "| organization | state | files | rejected | distributions | total | open exceptions "
        "| run |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in summary["organizations"].values():
        run = row["run"]
        link = f"[{run.rsplit('/', 1)[-1]}]({run})" if run.startswith("http") else f"`{run}`"
        lines.append(
            f"| {row['organization']} | {row['state']} | {row['files']} | {row['rejected']} | "
            f"{row['distributions']} | {row['total']} | {row['open_exceptions']} | {link} |"
        )
    t = summary["totals"]
    lines.append(
        f"| **all {t['organizations']}** | {t['failed']} failed | {t['files']} | {t['rejected']} "
        f"| {t['distributions']} | {t['total']} | {t['open_exceptions']} | |"
    )
    if summary.get("morning"):
        lines += ["", f"Morning view across organizations: [morning.xlsx]({summary['morning']})"]
    failed = [r for r in summary["organizations"].values() if r["state"] != "Completed"]
    if failed:
        lines += ["", "## Did not complete", ""]
        lines += [f"- {r['organization']} ({r['state']}): {r['message']}" for r in failed]
    return "\n".join(lines) + "\n"

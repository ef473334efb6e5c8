"""`fundpipe audit export`: the exception events, the period events and the syncs of a span, as
Parquet and CSV for an auditor; over `fundpipe.reconcile.audit`."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Annotated

import typer

from fundpipe.app.cli.common import (
    DataDirOption,
    JsonOption,
    OrgOption,
    console,
    local_org_settings,
    user_errors,
)
from fundpipe.app.cli.help_text import Typer
from fundpipe.errors import InputError

__all__ = ["audit_app"]

audit_app = Typer(
    help="What an auditor takes away: the organization's events and syncs as files.",
    no_args_is_help=True,
)


def _day(text: str | None, option: str) -> date | None:
    if text is None:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise InputError(f"{option} {text!r} is not a date like 2026-11-30") from None


@audit_app.command("export")
def export_command(
    out: Annotated[Path, typer.Option("--out", help="The folder to write the files into.")],
    from_: Annotated[
        str | None,
        typer.Option("--from", help="First day, YYYY-MM-DD (default: the beginning)."),
    ] = None,
    to: Annotated[
        str | None, typer.Option("--to", help="Last day, YYYY-MM-DD (default: up to now).")
    ] = None,
    data_dir: DataDirOption = None,
    org: OrgOption = None,
    json_out: JsonOption = False,
) -> None:
    """Write the exception events, the period events and the syncs from --from to --to (days in
    the reporting timezone) into --out as Parquet and CSV.

    Example: fundpipe audit export --org org_demo --from 2026-11-01 --to 2026-11-30 --out audit/
    """
    with user_errors(data_dir):
        from fundpipe.reconcile import export_audit, span

        first, last = _day(from_, "--from"), _day(to, "--to")
        if first and last and last < first:
            raise InputError(f"--to {last} is before --from {first}")
        settings = local_org_settings(data_dir, org)
        start, end = span(first, last, settings.pipeline.reporting_timezone, now=datetime.now(UTC))
        done = export_audit(settings, out, start=start, end=end)
        if json_out:
            print(
                json.dumps(
                    {
                        "folder": str(done.folder),
                        "from": done.start.isoformat(),
                        "to": done.end.isoformat(),
                        "rows": done.rows,
                        "files": [str(f) for f in done.files],
                    },
                    indent=2,
                )
            )
            return
        for name, rows in done.rows.items():
            console.print(f"{name}: {rows} row(s)", markup=False, highlight=False)
        console.print(f"written to {done.folder} (Parquet and CSV)", markup=False)

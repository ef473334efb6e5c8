"""Command-line interface: parses arguments, calls library functions, renders results.

Exit codes are the table in `fundpipe.errors` (`ExitCode`); every failure reaches the person as
one line through `user_errors`, which asks `fundpipe.errors.as_fundpipe_error` for the code.
Commands build `Settings` here, start the embedded sandbox when no service is configured
(`fundpipe.app.embedded`) and render with `fundpipe.app.cli.render`.

Longer than ~400 lines: the top-level commands (run, validate, reconcile, sync, …) each parse
their options here; their work is in the library and `fundpipe.app.cli.direct`.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import date, datetime
from pathlib import Path
from typing import Annotated
from zoneinfo import ZoneInfo

import typer

from fundpipe.app.cli.alerts import alerts_app
from fundpipe.app.cli.audit import audit_app
from fundpipe.app.cli.close import close_app
from fundpipe.app.cli.common import (
    DataDirOption,
    JsonOption,
    OrgOption,
    console,
    err_console,
    local_org_settings,
    org_settings_for,
    settings_for,
    user_errors,
)
from fundpipe.app.cli.desk import desk_app
from fundpipe.app.cli.exceptions import exceptions_app
from fundpipe.app.cli.help_text import Typer
from fundpipe.app.cli.orchestrate import serve_command, watch_command
from fundpipe.app.cli.record import backup_command, restore_command, where_the_record_is
from fundpipe.app.cli.sandbox import sandbox_command
from fundpipe.errors import EXIT_CODE_MEANINGS, InputError

EXIT_CODES_HELP = (
    "Exit codes: "
    + " · ".join(f"{int(code)} {meaning}" for code, meaning in EXIT_CODE_MEANINGS.items())
    + "."
)

app = Typer(
    help="fundpipe: fund distribution sheets → the Fund Distribution Service, exactly once, "
    "reconciled in DuckDB.\n\n" + EXIT_CODES_HELP,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(alerts_app, name="alerts")
app.add_typer(exceptions_app, name="exceptions")
app.add_typer(audit_app, name="audit")
app.add_typer(close_app, name="close")
app.add_typer(desk_app, name="desk")
app.command("restore")(restore_command)
app.command("backup")(backup_command)
app.command("sandbox")(sandbox_command)
app.command("serve")(serve_command)
app.command("watch")(watch_command)


@app.command("config")
def config_command(json_out: JsonOption = False) -> None:
    """Print the effective configuration, with secrets redacted, and each organization: its
    name, inbox, ledger, warehouse, reports, durable record and what its ledger is bound to.

    Reads only local files (every organization, no --org). Example: fundpipe config --json
    """
    with user_errors():
        settings = settings_for()
        values = settings.redacted()
        values["mode"] = "embedded sandbox" if settings.service.embedded else "configured service"
        from fundpipe.orgs import configured_orgs
        from fundpipe.submit import describe_orgs

        values.update(describe_orgs(settings, **configured_orgs(settings)))
        if json_out:
            print(json.dumps(values, indent=2, default=str))
            return
        from fundpipe.app.cli.render import render_config

        render_config(values, console)


@app.command("validate")
def validate_command(
    files: Annotated[
        list[Path] | None,
        typer.Argument(help="Sheets to validate (CSV, XLSX, Parquet); default: the inbox's."),
    ] = None,
    org: OrgOption = None,
    data_dir: DataDirOption = None,
    output_format: Annotated[
        str, typer.Option("--format", help="table (default) or json.")
    ] = "table",
    online: Annotated[
        bool,
        typer.Option(
            "--online",
            help="Also check against the service, read-only: entities, contacts, vehicles "
            "and references that already exist there with other content. Nothing is sent.",
        ),
    ] = False,
) -> None:
    """Validate sheets and report every problem by file, sheet, row and column.

    Offline by default; with --online the service is read (never written) for what only it
    knows, so every problem the night would find is in one report.
    Exit 0 when every file is valid, 1 when any is rejected, 2 when an input can't be read.
    Without files: what waits in the organization's inbox (`--org`, needed only when several
    organizations are configured).

    Example: fundpipe validate --online --format json data/samples/distributions_q4.csv
    """
    with user_errors(data_dir):
        _reads_sheets()
        if output_format not in {"table", "json"}:
            raise InputError("--format must be table or json")
        from fundpipe.app.cli.render import RichProgress, render_validation
        from fundpipe.app.outcomes import validation_dict
        from fundpipe.validate import validate_exit_code, validate_files

        settings = settings_for(data_dir)
        if not files:
            from fundpipe.orgs import waiting_sheets

            files = waiting_sheets(settings, org)
            if not files:
                console.print("nothing to validate: no sheet waits in the inbox")
                return
        from fundpipe.app.cli.process import paused_gc

        if online:
            from fundpipe.submit import check_online

            with org_settings_for(data_dir, org) as live:
                checked = check_online(live, files)
            for warning in checked.warnings:
                err_console.print(f"[yellow]warning:[/] {warning}", markup=True)
            reports = checked.reports
        else:
            with RichProgress(err_console) as progress:
                reports = validate_files(
                    files,
                    progress=progress,
                    date_order=settings.pipeline.date_order,
                    around_cells=paused_gc,
                )
        if output_format == "json":
            print(json.dumps(validation_dict(reports), indent=2, default=str))
        else:
            render_validation(reports, console)
        raise typer.Exit(validate_exit_code(reports))


@app.command("ingest")
def ingest_command(
    files: Annotated[
        list[Path] | None,
        typer.Argument(help="Sheets to submit; default: every ready file in the inbox."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan and send nothing.")
    ] = False,
    require_funds: Annotated[
        bool,
        typer.Option("--require-funds", help="Refuse distributions the depository can't cover."),
    ] = False,
    data_dir: DataDirOption = None,
    org: OrgOption = None,
    json_out: JsonOption = False,
) -> None:
    """Validate sheets and create their entities, contacts and distributions exactly once.

    Example: fundpipe ingest --dry-run data/samples/distributions_q4.csv
    """
    with user_errors(data_dir):
        _reads_sheets()
        from fundpipe.app.cli.process import frozen_gc, paused_gc
        from fundpipe.app.cli.render import (
            RichProgress,
            render_ingest,
            render_plan,
            render_preflight,
        )
        from fundpipe.submit import ingest

        with org_settings_for(data_dir, org) as live, RichProgress(err_console) as progress:
            result = ingest.ingest(
                live,
                files or None,
                dry_run=dry_run,
                require_funds=require_funds or None,
                progress=progress,
                around_submit=frozen_gc,
                around_cells=paused_gc,
                around_planning=paused_gc,
            )
        if json_out:
            from fundpipe.app.outcomes import ingest_dict

            print(json.dumps(ingest_dict(result), indent=2, default=str))
        elif not result.files:
            console.print("nothing to ingest: no complete sheet in the inbox")
            render_ingest(result, console)  # what it holds besides, each with a word
        else:
            render_preflight(result.preflight, console)
            if result.dry_run and result.plan is not None:
                render_plan(result.plan, console)
            # a dry run too: what a real run would reject, refuse or leave in conflict, and why
            render_ingest(result, console)
        raise typer.Exit(result.exit_code)


@app.command("sync")
def sync_command(
    data_dir: DataDirOption = None,
    org: OrgOption = None,
    json_out: JsonOption = False,
    full: Annotated[
        bool,
        typer.Option("--full", help="Walk every list whole, not only down to what is known."),
    ] = False,
) -> None:
    """Pull vehicles, balances, distributions, payments, entities and contacts into DuckDB.

    Only what is new or still open is pulled; --full re-reads everything.

    Example: fundpipe sync --json
    """
    with user_errors(data_dir):
        from fundpipe.app.cli.render import RichProgress, render_counts
        from fundpipe.sync import sync

        with org_settings_for(data_dir, org) as live, RichProgress(err_console) as progress:
            result = sync(live, progress=progress, full=full)
        if json_out:
            from fundpipe.app.outcomes import sync_dict

            print(json.dumps(sync_dict(result), indent=2, default=str))
        else:
            render_counts("synced", result.counts, console)


@app.command("reconcile")
def reconcile_command(
    as_of: Annotated[
        str | None, typer.Option("--as-of", help="Report date, YYYY-MM-DD (default: today).")
    ] = None,
    as_known_at: Annotated[
        str | None,
        typer.Option(
            "--as-known-at",
            help="Reproduce the report issued at this instant (ISO 8601, e.g. "
            "2026-12-01T09:00:00Z; without an offset: the reporting timezone; a report folder's "
            "report.json names its own). Default: the end of the --as-of day.",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Report directory (default data/reports/<org>/<date>/<run time>Z, with "
            "data/reports/<org>/latest).",
        ),
    ] = None,
    rebuild: Annotated[
        bool,
        typer.Option(
            "--rebuild",
            help="Write a new report folder even when nothing it shows changed since today's "
            "newest report (by default that report stays the latest and nothing is written).",
        ),
    ] = False,
    data_dir: DataDirOption = None,
    org: OrgOption = None,
    json_out: JsonOption = False,
) -> None:
    """Build the reconciliation views and write Parquet files and reconciliation.xlsx.

    Example: fundpipe reconcile --as-of 2026-11-30 (as issued: --as-known-at
    2026-12-01T09:00:00Z)
    """
    with user_errors(data_dir):
        report_date = _parse_date(as_of)
        from fundpipe.app.cli.render import render_summary
        from fundpipe.reconcile import reconcile

        settings = local_org_settings(data_dir, org)
        known_at = _parse_instant(
            as_known_at, settings.pipeline.reporting_timezone, "--as-known-at"
        )
        result = reconcile(
            settings, as_of=report_date, out_dir=out, known_at=known_at, rebuild=rebuild
        )
        if json_out:
            from fundpipe.app.outcomes import reconcile_dict

            payload = reconcile_dict(result)
            payload.pop("exceptions_rows", None)
            print(json.dumps(payload, indent=2, default=str))
        elif result.unchanged:  # nothing new, nothing done: one line
            from rich.markup import escape

            console.print(escape(result.kept), highlight=False, soft_wrap=True)
        else:
            render_summary(result, console)


@app.command("run")
def run_command(
    samples: Annotated[
        bool,
        typer.Option("--samples", help="First copy the clean sample sheets into the inbox."),
    ] = False,
    as_of: Annotated[
        str | None, typer.Option("--as-of", help="Report date, YYYY-MM-DD (default: today).")
    ] = None,
    data_dir: DataDirOption = None,
    json_out: JsonOption = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="Show the run's log lines (as the flow: Prefect's own logs, and tracebacks) on "
            "the console; what reaches the Prefect server is the same either way.",
        ),
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            help="Print nothing but errors (the exit code still tells); the run's logs reach "
            "the Prefect server as always.",
        ),
    ] = False,
    prefect: Annotated[
        bool,
        typer.Option(
            "--prefect",
            help="Run as the Prefect flow even with no PREFECT_API_URL (then on a temporary "
            "Prefect server, started and stopped with the run).",
        ),
    ] = False,
) -> None:
    """Run the nightly job once for every organization (ingest the inbox → sync → reconcile,
    one organization per thread).

    With PREFECT_API_URL set, --prefect, a Prefect Secret block configured or
    FUNDPIPE_FAN_OUT=deployments it runs as the Prefect `nightly` flow (one child flow run per
    organization, its artifacts and events on the server); otherwise directly in this process,
    with the same table, reports, exit code and run-log lines (--verbose shows them), and no
    temporary Prefect server.

    Example: fundpipe run --samples
    """
    with user_errors(data_dir):
        report_date = _parse_date(as_of)
        from fundpipe.app.cli import direct

        if direct.needs_the_flow(settings_for(data_dir), prefect, dict(os.environ)):
            summary = direct.flow_night(samples, report_date, data_dir, verbose)
        else:
            _reads_sheets()
            summary = direct.night_here(samples, report_date, data_dir, verbose)
        if json_out:
            print(json.dumps(summary.as_json(), indent=2, default=str))
        elif not quiet:
            from fundpipe.app.cli.render import render_run_summary

            render_run_summary(summary, console)
            console.print(where_the_record_is(settings_for(data_dir)), markup=False)
        raise typer.Exit(summary.exit_code)


def _parse_date(text: str | None) -> date | None:
    if text is None:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise InputError(f"--as-of {text!r} is not a date like 2026-11-30") from None


def _parse_instant(text: str | None, zone: str, option: str) -> datetime | None:
    """An ISO 8601 instant (`Z` or an offset; none: in `zone`)."""
    if text is None:
        return None
    try:
        at = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InputError(f"{option} {text!r} is not a time like 2026-12-01T09:00:00Z") from None
    return at if at.tzinfo else at.replace(tzinfo=ZoneInfo(zone))


def _reads_sheets() -> None:
    """This process reads sheets: let Arrow allocate with malloc (see `use_system_allocator`)
    and keep fastexcel's fallback warnings off the console (`quiet_fastexcel`).

    Imported here, not at the top: `fundpipe.sheets` brings pandas, ~0.3 s that `sync`,
    `reconcile` and `exceptions` do not need.
    """
    from fundpipe.sheets.frames import quiet_fastexcel, use_system_allocator

    use_system_allocator()
    quiet_fastexcel()


def main() -> None:
    """Entry point of the `fundpipe` console script."""
    from fundpipe.app.cli.process import leave_objects_at_exit, say_lock_lines

    leave_objects_at_exit()  # the process ends with the command: leave its heap to the OS
    say_lock_lines()  # a wait for a lock, or a takeover, is told whatever Prefect's console shows
    try:
        app()
    except SystemExit as exc:
        sys.exit(exc.code)

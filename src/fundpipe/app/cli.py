"""Command-line interface: parses arguments, calls library functions, renders results.

Exit codes (the same for every command):

| code | meaning |
|---|---|
| 0 | success; every file valid |
| 1 | a file was rejected, or a distribution needs a person (conflict, funding refusal) |
| 2 | usage error, or an input that can't be read at all |
| 3 | the service failed or refused us (authentication, permission, network, retries exhausted) |
| 4 | another fundpipe process holds the inbox lock or the warehouse |
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import date
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from fundpipe.config import Settings

EXIT_OK = 0
EXIT_REJECTED = 1
EXIT_USAGE = 2
EXIT_SERVICE = 3
EXIT_LOCKED = 4

EXIT_CODES_HELP = (
    "Exit codes: 0 success · 1 a file rejected or a distribution needs a person · "
    "2 usage error or unreadable input · 3 service error · 4 lock held by another process."
)

app = typer.Typer(
    help="fundpipe: fund distribution sheets → the Fund Distribution Service, exactly once, "
    "reconciled in DuckDB.\n\n" + EXIT_CODES_HELP,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

console = Console()
err_console = Console(stderr=True)


def _prefect_defaults(verbose: bool = False) -> None:
    """Sensible Prefect defaults for a local run (each overridable by the environment).

    Prefect's console handlers would print a failing task's traceback; a person gets the CLI's
    one-line message instead (the full log still reaches the Prefect API). `--verbose` shows it.
    """
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    level = "INFO" if verbose else "CRITICAL"
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "INFO" if verbose else "WARNING")
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", level)
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_FLOW_RUNS_LEVEL", level)
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_TASK_RUNS_LEVEL", level)


def _settings(data_dir: Path | None = None) -> Settings:
    settings = Settings()
    if data_dir is not None:
        settings = settings.model_copy(update={"data_dir": data_dir})
    return settings


@contextmanager
def _user_errors() -> Iterator[None]:
    """Turn every expected failure into a one-line message and an exit code (never a traceback)."""
    from fundpipe.errors import UserFacingError

    try:
        yield
    except typer.Exit:
        raise
    except UserFacingError as exc:
        err_console.print(f"[bold red]error:[/] {exc}")
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted[/]")
        raise typer.Exit(130) from None
    except Exception as exc:  # every failure becomes a message, never a traceback
        code, message = _classify(exc)
        err_console.print(f"[bold red]error:[/] {message}")
        raise typer.Exit(code) from None


def _classify(exc: BaseException) -> tuple[int, str]:
    """Map library exceptions to an exit code and a redacted message."""
    from fundpipe.errors import describe_failure

    return describe_failure(exc)


DataDirOption = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Data directory (inbox, ledger, warehouse, reports)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


@app.command("config")
def config_command(json_out: JsonOption = False) -> None:
    """Print the effective configuration, with secrets redacted."""
    with _user_errors():
        settings = _settings()
        values = settings.redacted()
        values["mode"] = "embedded sandbox" if settings.embedded else "configured service"
        if json_out:
            print(json.dumps(values, indent=2, default=str))
            return
        from rich.table import Table

        table = Table(title="fundpipe configuration", show_header=True)
        table.add_column("setting")
        table.add_column("value")
        for key, value in values.items():
            table.add_row(key, "" if value is None else str(value))
        console.print(table)


@app.command("sandbox")
def sandbox_command(
    host: Annotated[str, typer.Option(help="Interface to bind (loopback by default).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="TCP port.")] = 8765,
    db: Annotated[
        Path | None, typer.Option(help="SQLite state file (default: a temporary one).")
    ] = None,
    seed: Annotated[str, typer.Option(help="Initial state: demo or empty.")] = "demo",
    allow_non_loopback: Annotated[
        bool,
        typer.Option(
            "--allow-non-loopback",
            help="Allow binding beyond loopback (its /_sandbox/ control routes have no auth).",
        ),
    ] = False,
    strict_interface: Annotated[
        bool,
        typer.Option(
            "--strict-interface",
            help="Serve only the documented interface: our own routes 404, our fields left out.",
        ),
    ] = False,
    public_forms: Annotated[
        bool,
        typer.Option(
            "--public-forms", help="Serve the public spec's forms (external_references, ...)."
        ),
    ] = False,
    legacy_pagination: Annotated[
        bool,
        typer.Option(
            "--legacy-pagination", help="Lists in the older has_more-only form (no page URLs)."
        ),
    ] = False,
    demo_orgs: Annotated[
        int,
        typer.Option(
            "--demo-orgs", min=1, max=26, help="Demo organizations the demo seed creates."
        ),
    ] = 1,
) -> None:
    """Serve the Fund Distribution Service sandbox over HTTP (Ctrl-C stops it).

    Clients: demo-client / demo-secret (every scope) and demo-reader / reader-secret (read only)
    act for org_demo. /_sandbox/ control routes reset it, advance its clock and inject faults.
    """
    if seed not in {"demo", "empty"}:
        err_console.print("[bold red]error:[/] --seed must be demo or empty")
        raise typer.Exit(EXIT_USAGE)
    if host not in {"127.0.0.1", "localhost", "::1"} and not allow_non_loopback:
        err_console.print(
            f"[bold red]error:[/] refusing to serve on {host}: the sandbox's control routes "
            "are unauthenticated; pass --allow-non-loopback if you mean it"
        )
        raise typer.Exit(EXIT_USAGE)
    with _user_errors():
        from fundpipe.sandbox import run_server

        console.print(f"sandbox on http://{host}:{port} (seed {seed}); Ctrl-C to stop")
        run_server(
            host=host,
            port=port,
            db_path=db,
            seed=seed,
            allow_non_loopback=allow_non_loopback,
            strict_interface=strict_interface,
            public_forms=public_forms,
            legacy_pagination=legacy_pagination,
            demo_orgs=demo_orgs,
        )


@app.command("validate")
def validate_command(
    files: Annotated[list[Path], typer.Argument(help="Sheets to validate (CSV, XLSX, Parquet).")],
    output_format: Annotated[
        str, typer.Option("--format", help="table (default) or json.")
    ] = "table",
) -> None:
    """Validate sheets offline and report every problem by file, sheet, row and column.

    Exit 0 when every file is valid, 1 when any is rejected, 2 when an input can't be read.
    """
    if output_format not in {"table", "json"}:
        err_console.print("[bold red]error:[/] --format must be table or json")
        raise typer.Exit(EXIT_USAGE)
    with _user_errors():
        from fundpipe.progress import RichProgress
        from fundpipe.validate.files import (
            render_json,
            render_table,
            validate_exit_code,
            validate_files,
        )

        with RichProgress(err_console) as progress:
            reports = validate_files(files, progress=progress)
        if output_format == "json":
            print(json.dumps(render_json(reports), indent=2, default=str))
        else:
            render_table(reports, console)
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
    json_out: JsonOption = False,
) -> None:
    """Validate sheets and create their entities, contacts and distributions exactly once."""
    with _user_errors():
        from fundpipe.app.embedded import service
        from fundpipe.progress import RichProgress
        from fundpipe.submit.ingest import ingest

        settings = _settings(data_dir)
        with service(settings) as live, RichProgress(err_console) as progress:
            result = ingest(
                live,
                files or None,
                dry_run=dry_run,
                require_funds=require_funds or None,
                console=None if json_out else console,
                progress=progress,
            )
        if json_out:
            from fundpipe.app.outcomes import ingest_dict

            print(json.dumps(ingest_dict(result), indent=2, default=str))
        elif not result.files:
            console.print("nothing to ingest: no complete sheet in the inbox")
        raise typer.Exit(result.exit_code)


@app.command("sync")
def sync_command(data_dir: DataDirOption = None, json_out: JsonOption = False) -> None:
    """Pull vehicles, balances, distributions, payments, entities and contacts into DuckDB."""
    with _user_errors():
        from fundpipe.app.embedded import service
        from fundpipe.progress import RichProgress
        from fundpipe.sync.pull import sync

        settings = _settings(data_dir)
        with service(settings) as live, RichProgress(err_console) as progress:
            result = sync(live, progress=progress)
        from fundpipe.app.outcomes import sync_dict

        payload = sync_dict(result)
        if json_out:
            print(json.dumps(payload, indent=2, default=str))
        else:
            _print_counts("synced", payload["counts"])


@app.command("reconcile")
def reconcile_command(
    as_of: Annotated[
        str | None, typer.Option("--as-of", help="Report date, YYYY-MM-DD (default: today).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Report directory (default data/reports/<date>).")
    ] = None,
    data_dir: DataDirOption = None,
    json_out: JsonOption = False,
) -> None:
    """Build the reconciliation views and write Parquet files and reconciliation.xlsx."""
    report_date = _parse_date(as_of)
    with _user_errors():
        from fundpipe.app.render import render_summary
        from fundpipe.reconcile.views import reconcile

        settings = _settings(data_dir)
        result = reconcile(settings, as_of=report_date, out_dir=out)
        if json_out:
            from fundpipe.app.outcomes import reconcile_dict

            payload = reconcile_dict(result)
            payload.pop("exceptions_rows", None)
            print(json.dumps(payload, indent=2, default=str))
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
        bool, typer.Option("--verbose", help="Show Prefect's own logs (and tracebacks).")
    ] = False,
) -> None:
    """Run the nightly job once (ingest the inbox → sync → reconcile) as a Prefect flow."""
    report_date = _parse_date(as_of)
    _prefect_defaults(verbose)
    with _user_errors():
        from fundpipe.app.samples import load_flows

        flows = load_flows()
        state = flows.nightly(
            samples=samples,
            as_of=report_date.isoformat() if report_date else None,
            data_dir=str(data_dir) if data_dir else None,
            return_state=True,
        )
        summary = _run_outcome(state)
        if json_out:
            print(json.dumps(summary, indent=2, default=str))
        else:
            from fundpipe.app.samples import render_run_summary

            render_run_summary(summary, console)
        raise typer.Exit(summary.get("exit_code", EXIT_OK))


@app.command("serve")
def serve_command() -> None:
    """Serve the `nightly` (cron) and `inbox` (on file arrival, and every few minutes)
    deployments from this process, and watch the inbox.

    Uses the Prefect server named by PREFECT_API_URL; without one, starts `prefect server
    start` on 127.0.0.1:FUNDPIPE_PREFECT_PORT (4200) and stops it on exit. Stop with Ctrl-C.

    Example: FUNDPIPE_NIGHTLY_CRON="*/5 * * * *" fundpipe serve
    """
    _prefect_defaults()
    # how often the served deployments look for runs to start (Prefect's default is 10 s)
    os.environ.setdefault("PREFECT_RUNNER_POLL_FREQUENCY", "2")
    with _user_errors(), ExitStack() as stack:
        settings = _settings()
        if not os.environ.get("PREFECT_API_URL"):
            from fundpipe.app.prefect_server import local_prefect_server

            log = settings.data_dir / "prefect-server.log"
            err_console.print(f"starting a Prefect server on 127.0.0.1:{settings.prefect_port}")
            url = stack.enter_context(local_prefect_server(settings.prefect_port, log))
            os.environ["PREFECT_API_URL"] = url
            err_console.print(f"Prefect UI: {url.removesuffix('/api')}  (server log: {log})")
        err_console.print(
            f"serving nightly and inbox; watching {settings.data_dir / 'inbox'} (Ctrl-C stops)"
        )
        from fundpipe.app.samples import load_flows

        load_flows().serve_all()


@app.command("watch")
def watch_command(data_dir: DataDirOption = None) -> None:
    """Watch the inbox and start an `inbox` run as soon as a dropped file settles.

    Emits the Prefect event `fundpipe.inbox.file.settled` to the server named by
    PREFECT_API_URL; the `inbox` deployment (flows/prefect.yaml) is triggered by it. Run it on
    the machine whose data directory holds the inbox, beside `prefect worker start`.

    Example: PREFECT_API_URL=http://127.0.0.1:4200/api fundpipe watch --data-dir data
    """
    _prefect_defaults()
    with _user_errors():
        if not os.environ.get("PREFECT_API_URL"):
            from fundpipe.errors import InputError

            raise InputError(
                "fundpipe watch announces files to a Prefect server: set PREFECT_API_URL "
                "(or use `fundpipe serve`, which watches the inbox itself)"
            )
        from fundpipe.app.watch import names, prefect_announcer, watch_inbox
        from fundpipe.submit.inbox import InboxDirs

        settings = _settings(data_dir)
        inbox = InboxDirs(settings.data_dir).inbox
        announce = prefect_announcer(settings.data_dir)

        def announce_and_say(paths: list[Path]) -> None:
            announce(paths)
            err_console.print(f"settled: {names(paths)} → inbox run requested")

        err_console.print(f"watching {inbox} (Ctrl-C stops)")
        watch_inbox(inbox, announce_and_say, settle_s=settings.inbox_settle_s)


def _run_outcome(state: Any) -> dict[str, Any]:
    """The summary of a finished nightly flow run; a run that did not complete exits with the
    code its state carries and its state message (fundpipe's plain sentence)."""
    data = state.result(raise_on_failure=False) if state.data is not None else None
    if state.is_completed() and isinstance(data, dict):
        return data
    code = data.get("exit_code", EXIT_SERVICE) if isinstance(data, dict) else EXIT_SERVICE
    err_console.print(f"[bold red]error:[/] {state.message or state.name}")
    raise typer.Exit(code)


def _parse_date(text: str | None) -> date | None:
    if text is None:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        err_console.print(f"[bold red]error:[/] --as-of {text!r} is not a date like 2026-11-30")
        raise typer.Exit(EXIT_USAGE) from None


def _print_counts(title: str, counts: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(title=title, show_header=True)
    table.add_column("what")
    table.add_column("rows", justify="right")
    for key, value in counts.items():
        table.add_row(str(key), f"{value:,}" if isinstance(value, int) else str(value))
    console.print(table)


def main() -> None:
    """Entry point of the `fundpipe` console script."""
    try:
        app()
    except SystemExit as exc:
        sys.exit(exc.code)

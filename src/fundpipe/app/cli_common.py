"""What every CLI command shares: the consoles, Prefect's defaults for a local run, settings
from the environment, and the one place a failure becomes a line and an exit code."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from fundpipe.config import Settings
from fundpipe.errors import ExitCode, as_fundpipe_error

console = Console()
err_console = Console(stderr=True)


def prefect_defaults(verbose: bool = False) -> None:
    """Sensible Prefect defaults for a local run (each overridable by the environment).

    Prefect's console handlers would print a failing task's traceback; a person gets the CLI's
    one-line message instead (the full log still reaches the Prefect API). `--verbose` shows it.
    """
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    level = "INFO" if verbose else "CRITICAL"
    # the run logger stays at INFO: its lines reach the Prefect API (the run's Logs tab) while
    # the console handlers are quiet
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "INFO")
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", level)
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_FLOW_RUNS_LEVEL", level)
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_TASK_RUNS_LEVEL", level)


def settings_for(data_dir: Path | None = None) -> Settings:
    """Settings from the environment, with `--data-dir` when given."""
    settings = Settings()
    if data_dir is not None:
        settings = settings.model_copy(update={"data_dir": data_dir})
    return settings


@contextmanager
def org_settings_for(data_dir: Path | None, org: str | None) -> Iterator[Settings]:
    """The settings of one organization (`--org`; needed only when several are configured),
    pointed at a running service (the embedded sandbox when none is configured). A
    single-organization layout is moved into `data/orgs/<org>/` first, saying so once."""
    from fundpipe.app.orgs import one_org

    with one_org(
        settings_for(data_dir), org, lambda line: err_console.print(line, soft_wrap=True)
    ) as settings:
        yield settings


def local_org_settings(data_dir: Path | None, org: str | None) -> Settings:
    """One organization's settings for a command that reads only local files (reconcile,
    exceptions), without asking the service: see `fundpipe.app.orgs.local_org`."""
    from fundpipe.app.orgs import local_org

    return local_org(
        settings_for(data_dir), org, lambda line: err_console.print(line, soft_wrap=True)
    )


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn every expected failure into a one-line message and an exit code (never a traceback)."""
    try:
        yield
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted[/]")
        raise typer.Exit(ExitCode.INTERRUPTED) from None
    except Exception as exc:  # every failure becomes a message, never a traceback
        error = as_fundpipe_error(exc)
        err_console.print(f"[bold red]error:[/] {error}")
        raise typer.Exit(int(error.exit_code)) from None


DataDirOption = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Data directory (inbox, ledger, warehouse, reports)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
OrgOption = Annotated[
    str | None,
    typer.Option(
        "--org", help="Organization id (needed only when several organizations are configured)."
    ),
]

"""What every CLI command shares: the consoles, settings, options and the one error handler."""

from __future__ import annotations

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


def _settings(data_dir: Path | None = None) -> Settings:
    settings = Settings()
    if data_dir is not None:
        settings = settings.model_copy(update={"data_dir": data_dir})
    return settings


@contextmanager
def _user_errors() -> Iterator[None]:
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

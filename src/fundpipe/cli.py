"""Command-line interface: parses arguments, calls library functions, renders results."""

from __future__ import annotations

import typer

app = typer.Typer(help="fundpipe: fund distribution sheets to the Fund Distribution Service, reconciled.")


@app.callback()
def _root() -> None:
    """fundpipe command group."""


def main() -> None:
    """Entry point of the `fundpipe` console script."""
    app()

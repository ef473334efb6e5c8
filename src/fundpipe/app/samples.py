"""Glue between the Prefect flows in `flows/` and the CLI: load the flows, copy the samples,
summarise a run.

The flows themselves live in `flows/` (as `prefect.yaml` expects); the steps they compose live
in this package (`ingest`, `sync`, `reconcile`) and run without Prefect in unit tests.
"""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

from rich.console import Console
from rich.table import Table

from fundpipe.config import Settings

#: Sheet extensions the inbox accepts.
SHEET_SUFFIXES = (".csv", ".tsv", ".txt", ".xlsx", ".parquet")


def load_flows() -> ModuleType:
    """The module defining the nightly, ingest, sync and reconcile flows and `serve_all`."""
    return importlib.import_module("fundpipe.app.flows")


def copy_samples(settings: Settings) -> list[Path]:
    """Copy the clean sample sheets of `<data_dir>/samples/` (not `broken/`) into the inbox.

    Copying the same samples twice is harmless: the ledger recognises a file it has already
    submitted by its content hash and creates nothing new.
    """
    samples = settings.data_dir / "samples"
    inbox = settings.data_dir / "inbox"
    inbox.mkdir(parents=True, exist_ok=True)
    copied = []
    for sheet in sorted(samples.glob("*")):
        if sheet.is_file() and sheet.suffix.lower() in SHEET_SUFFIXES:
            target = inbox / sheet.name
            # copy2 keeps the sample's modification time: a complete file, not one being written
            shutil.copy2(sheet, target)
            copied.append(target)
    return copied


def render_run_summary(summary: dict[str, Any], console: Console) -> None:
    """Print a nightly run's summary table and where its reports are."""
    table = Table(title=f"fundpipe nightly run — {summary.get('as_of', '')}", show_header=True)
    table.add_column("what")
    table.add_column("value", justify="right")
    for key, value in summary.get("facts", {}).items():
        table.add_row(str(key), str(value))
    console.print(table)
    rejected = summary.get("rejected_files") or []
    for item in rejected:
        console.print(f"[red]rejected[/] {item['file']} — report: {item.get('report', '')}")
    paths = summary.get("reports") or {}
    if paths:
        console.print("[bold]Reports[/]")
        for label, path in paths.items():
            console.print(f"  {label}: {path}")

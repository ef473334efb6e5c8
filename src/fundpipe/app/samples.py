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

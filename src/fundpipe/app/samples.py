"""The sample sheets: `fundpipe run --samples` copies the clean ones into the inbox.

(`load_flows` is kept for the flow tests: the flows are the module `fundpipe.app.flows`, imported,
never loaded by file path.)
"""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path
from types import ModuleType

from fundpipe.config import Settings
from fundpipe.submit.inbox import SHEET_SUFFIXES


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

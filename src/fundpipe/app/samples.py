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


#: The sample sheets shipped with the project (`data/samples/` of the checkout).
BUNDLED_SAMPLES = Path(__file__).resolve().parents[3] / "data" / "samples"


def _sheets(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return [
        p for p in sorted(folder.glob("*")) if p.is_file() and p.suffix.lower() in SHEET_SUFFIXES
    ]


def sample_sheets(settings: Settings, bundled: Path = BUNDLED_SAMPLES) -> list[Path]:
    """The clean sample sheets: `<data_dir>/samples/` when it has any, else the bundled ones.

    A custom data directory (``FUNDPIPE_DATA_DIR``) usually has no `samples/` of its own; the
    project's samples are used then, so `run --samples` never silently sees no files.
    """
    return _sheets(settings.data_dir / "samples") or _sheets(bundled)


def copy_samples(settings: Settings, bundled: Path = BUNDLED_SAMPLES) -> list[Path]:
    """Copy the clean sample sheets (not `broken/`) into `<data_dir>/inbox/`; return the copies.

    Copying the same samples twice is harmless: the ledger recognises a file it has already
    submitted by its content hash and creates nothing new.
    """
    inbox = settings.data_dir / "inbox"
    inbox.mkdir(parents=True, exist_ok=True)
    copied = []
    for sheet in sample_sheets(settings, bundled):
        target = inbox / sheet.name
        # copy2 keeps the sample's modification time: a complete file, not one being written
        shutil.copy2(sheet, target)
        copied.append(target)
    return copied

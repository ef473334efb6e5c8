"""The sample sheets: `fundpipe run --samples` copies the clean ones into each organization's inbox.

The top level of `data/samples/` holds the demo organization's (`org_demo`, or the only
organization of a single-organization setup); `data/samples/<org_id>/` another organization's
(`org_demob` of the embedded sandbox's second demo organization).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from fundpipe.config import DEMO_ORG_ID, Settings
from fundpipe.resources import SAMPLES_DIR
from fundpipe.submit import SHEET_SUFFIXES

#: The sample sheets shipped with the project (`data/samples/` of the checkout).
BUNDLED_SAMPLES = SAMPLES_DIR


def _sheets(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return [
        p for p in sorted(folder.glob("*")) if p.is_file() and p.suffix.lower() in SHEET_SUFFIXES
    ]


def sample_sheets(
    settings: Settings,
    bundled: Path = BUNDLED_SAMPLES,
    *,
    org_id: str | None = None,
    single: bool = True,
) -> list[Path]:
    """The clean sample sheets of an organization: from `<data_dir>/samples/` when it has any,
    else the bundled ones (`settings` are the run's top-level settings).

    `org_id`'s own folder (`samples/<org_id>/`) when there is one; the top-level sheets belong
    to the demo organization, or to the only organization (`single`). A custom data directory
    (``FUNDPIPE_DATA_DIR``) usually has no `samples/` of its own; the project's samples are used
    then, so `run --samples` never silently sees no files.
    """
    for root in (settings.local.data_dir / "samples", bundled):
        if org_id and _sheets(root / org_id):
            return _sheets(root / org_id)
        if (single or org_id == DEMO_ORG_ID) and _sheets(root):
            return _sheets(root)
    return []


def copy_samples(
    settings: Settings,
    bundled: Path = BUNDLED_SAMPLES,
    *,
    inbox: Path | None = None,
    org_id: str | None = None,
    single: bool = True,
) -> list[Path]:
    """Copy an organization's clean sample sheets (not `broken/`) into `inbox` (default
    `<data_dir>/inbox/`); return the copies. See `sample_sheets` for which sheets.

    Copying the same samples twice is harmless: the ledger recognises a file it has already
    submitted by its content hash and creates nothing new.
    """
    inbox = inbox or settings.local.data_dir / "inbox"
    inbox.mkdir(parents=True, exist_ok=True)
    copied = []
    for sheet in sample_sheets(settings, bundled, org_id=org_id, single=single):
        target = inbox / sheet.name
        # copy2 keeps the sample's modification time: a complete file, not one being written
        shutil.copy2(sheet, target)
        copied.append(target)
    return copied

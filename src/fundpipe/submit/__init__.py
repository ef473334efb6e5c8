"""Stage ④: exactly once — the inbox, the ledger, the service snapshot, execution, and `ingest`.

`ingest.ingest` orchestrates stages ①–④ and returns data (it prints nothing).

Other packages import from here, never from a module of this package:

- `ingest` — the module whose `ingest()` runs stages ①–④ for an inbox or files (a module, as its name is its function's)
- `IngestResult` — what one ingest did, file by file
- `FileOutcome` — what happened to one file
- `InboxDirs` — an organization's inbox and the folders beside it
- `SHEET_SUFFIXES` — the file suffixes read as sheets
- `is_transient_name` — a file still being written, or not a sheet
- `stable_files` — the inbox's sheets that have stopped changing
- `binding_file` — where the ledger's binding (service, organization) is kept
- `check_binding` — refuse a data folder bound to another service or organization
- `check_livemode` — refuse live data in a test folder and the reverse
- `describe_orgs` — what `fundpipe config` shows of the organizations (local files only)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fundpipe.faces import lazy_face

if TYPE_CHECKING:
    from fundpipe.submit import ingest
    from fundpipe.submit.binding import binding_file, check_binding, check_livemode, describe_orgs
    from fundpipe.submit.inbox import SHEET_SUFFIXES, InboxDirs, is_transient_name, stable_files
    from fundpipe.submit.verdicts import FileOutcome, IngestResult

__all__ = [
    "SHEET_SUFFIXES",
    "FileOutcome",
    "InboxDirs",
    "IngestResult",
    "binding_file",
    "check_binding",
    "check_livemode",
    "describe_orgs",
    "ingest",
    "is_transient_name",
    "stable_files",
]

#: Where each public name lives: its module is imported when the name is first used.
_HOMES = {
    "ingest": "ingest",
    "IngestResult": "verdicts",
    "FileOutcome": "verdicts",
    "InboxDirs": "inbox",
    "SHEET_SUFFIXES": "inbox",
    "is_transient_name": "inbox",
    "stable_files": "inbox",
    "binding_file": "binding",
    "check_binding": "binding",
    "check_livemode": "binding",
    "describe_orgs": "binding",
}

__getattr__ = lazy_face(__name__, _HOMES)

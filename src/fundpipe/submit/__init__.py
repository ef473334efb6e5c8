"""Stage ④: exactly once — the inbox, the ledger, the service snapshot, execution, and `ingest`.

`ingest.ingest` orchestrates stages ①–④ and returns data (it prints nothing).

Other packages import from here, never from a module of this package:

- `ingest` — the module whose `ingest()` runs stages ①–④ for an inbox or files (a module, as its name is its function's)
- `IngestResult` — what one ingest did, file by file
- `FileOutcome` — what happened to one file
- `BucketInbox` — an organization's inbox on the team's storage (`FUNDPIPE_INBOX_URL`)
- `InboxDirs` — an organization's inbox and the folders beside it
- `sanitize_name` — a dropped file's name made safe for the inbox
- `SHEET_SUFFIXES` — the file suffixes read as sheets
- `is_transient_name` — a file still being written, or not a sheet
- `stable_files` — the inbox's sheets that have stopped changing
- `binding_file` — where the ledger's binding (service, organization) is kept
- `check_binding` — refuse a data folder bound to another service or organization
- `check_livemode` — refuse live data in a test folder and the reverse
- `describe_orgs` — what `fundpipe config` shows of the organizations (local files only)
- `read_ledger` — the ledger opened read-only (a restore checks it)
- `SCHEMA_FILE` — the ledger's schema (`ledger.sql`)
- `check_online` — a drop validated offline and against the service, read-only (`OnlineCheck`)
- `OnlineCheck` — its reports, offline and online problems alike
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fundpipe.faces import lazy_face

if TYPE_CHECKING:
    from fundpipe.submit import ingest
    from fundpipe.submit.binding import binding_file, check_binding, check_livemode, describe_orgs
    from fundpipe.submit.bucket import BucketInbox
    from fundpipe.submit.inbox import (
        SHEET_SUFFIXES,
        InboxDirs,
        is_transient_name,
        sanitize_name,
        stable_files,
    )
    from fundpipe.submit.ledger import SCHEMA_FILE, read_ledger
    from fundpipe.submit.online import OnlineCheck, check_online
    from fundpipe.submit.verdicts import FileOutcome, IngestResult

__all__ = [
    "SCHEMA_FILE",
    "SHEET_SUFFIXES",
    "BucketInbox",
    "FileOutcome",
    "InboxDirs",
    "IngestResult",
    "OnlineCheck",
    "binding_file",
    "check_binding",
    "check_livemode",
    "check_online",
    "describe_orgs",
    "ingest",
    "is_transient_name",
    "read_ledger",
    "sanitize_name",
    "stable_files",
]

#: Where each public name lives: its module is imported when the name is first used.
_HOMES = {
    "ingest": "ingest",
    "IngestResult": "verdicts",
    "FileOutcome": "verdicts",
    "InboxDirs": "inbox",
    "BucketInbox": "bucket",
    "SHEET_SUFFIXES": "inbox",
    "is_transient_name": "inbox",
    "stable_files": "inbox",
    "sanitize_name": "inbox",
    "binding_file": "binding",
    "check_binding": "binding",
    "check_livemode": "binding",
    "describe_orgs": "binding",
    "read_ledger": "ledger",
    "SCHEMA_FILE": "ledger",
    "check_online": "online",
    "OnlineCheck": "online",
}

__getattr__ = lazy_face(__name__, _HOMES)

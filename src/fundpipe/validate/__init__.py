"""Stage ②: pandera models and cross-row checks turn text frames into a `FileReport`.

`files.validate_files` is the entry point; `models` holds one pandera model per sheet template,
`distribution` the distribution sheet's row checks a slice at a time, `cross_row` its cross-row
rules, `payments` what they read and the canonical payment frame, `roster` the roster's checks,
`issues` the row-level `Issue`/`FileReport`.

Other packages import from here, never from a module of this package:

- `validate_files` — read and check sheets → one `FileReport` each
- `validate_exit_code` — the exit code of `fundpipe validate` for those reports
- `FileReport` — one file's verdict and its row-level issues
- `Issue` — one row-level problem
- `IssueGroup` — one problem as the error report lists it, with all its rows
- `group_issues` — a report's errors then warnings, each problem once
- `column_letter` — a column's letter as Excel shows it (0 → A)
- `ENTITY_ID` — the pattern of a service entity id (`ent_…`)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fundpipe.faces import lazy_face

if TYPE_CHECKING:
    from fundpipe.validate.files import validate_exit_code, validate_files
    from fundpipe.validate.issues import FileReport, Issue, IssueGroup, column_letter, group_issues
    from fundpipe.validate.models import ENTITY_ID

__all__ = [
    "ENTITY_ID",
    "FileReport",
    "Issue",
    "IssueGroup",
    "column_letter",
    "group_issues",
    "validate_exit_code",
    "validate_files",
]

#: Where each public name lives: its module is imported when the name is first used.
_HOMES = {
    "validate_files": "files",
    "validate_exit_code": "files",
    "FileReport": "issues",
    "Issue": "issues",
    "IssueGroup": "issues",
    "group_issues": "issues",
    "column_letter": "issues",
    "ENTITY_ID": "models",
}

__getattr__ = lazy_face(__name__, _HOMES)

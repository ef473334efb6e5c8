"""The one-time move from the single-organization layout to `data/orgs/<org_id>/`.

Before several organizations, one data directory held one organization's state at its top level:
`inbox/`, `processing/`, `processed/`, `rejected/`, `ledger.duckdb` (+ `.wal`,
`ledger.binding.json`), `warehouse.duckdb` (+ `.wal`) and `reports/<date>/` (+ `reports/latest`).
`migrate_layout` moves what it finds into the organization's folders — `data/orgs/<org_id>/` and
`data/reports/<org_id>/` — by renames inside the data directory (one filesystem: nothing is
copied, nothing lost), never over an existing file, and says in one sentence what moved where.

Which organization the old state belongs to: the one its ledger is bound to, else
`FUNDPIPE_ORG_ID` (the embedded sandbox's `org_demo`), else the only configured one; when none of
these tells, or a name exists in both places, nothing moves and a plain
:class:`fundpipe.errors.ConfigurationError` says what to do. The embedded sandbox's state
(`sandbox/`), `samples/` and the Prefect server's log stay where they are: they are shared.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from fundpipe.config import Organization, Settings
from fundpipe.errors import ConfigurationError

__all__ = ["LEGACY_DIRS", "legacy_items", "migrate_layout"]

#: The single-organization folders, moved entry by entry.
LEGACY_DIRS = ("inbox", "processing", "processed", "rejected")
_LEDGER = ("ledger.duckdb", "ledger.duckdb.wal", "ledger.binding.json")
_WAREHOUSE = ("warehouse.duckdb", "warehouse.duckdb.wal")
#: A report folder of the old layout: `reports/<date>/`, and the `latest` link.
_REPORT = re.compile(r"^(\d{4}-\d{2}-\d{2}|latest)$")
#: Kept where they are (they keep an empty folder in a git checkout).
_KEEP = frozenset({".gitkeep"})


def _entries(folder: Path) -> list[Path]:
    if not folder.is_dir() or folder.is_symlink():
        return []
    return sorted(p for p in folder.iterdir() if p.name not in _KEEP)


def legacy_items(settings: Settings) -> list[tuple[Path, Path]]:
    """(old, new) for every piece of single-organization state under `settings.data_dir`,
    with `new` still to be chosen per organization: the paths are relative to the org folders
    (`orgs/<org>/…` → `…`, `reports/<org>/…` → `reports/…`)."""
    top = settings.local.data_dir
    moves: list[tuple[Path, Path]] = []
    for name in LEGACY_DIRS:
        moves += [(entry, Path(name) / entry.name) for entry in _entries(top / name)]
    files = [] if settings.local.ledger_path else list(_LEDGER)
    files += [] if settings.local.warehouse_path else list(_WAREHOUSE)
    moves += [(top / name, Path(name)) for name in files if (top / name).exists()]
    reports = top / "reports"
    for entry in _entries(reports) + (
        [reports / "latest"] if (reports / "latest").is_symlink() else []
    ):
        if _REPORT.match(entry.name) and (entry, Path("reports") / entry.name) not in moves:
            moves.append((entry, Path("reports") / entry.name))
    return moves


def _owner(settings: Settings, orgs: Sequence[Organization]) -> Organization:
    """The organization the old state belongs to (see the module docstring)."""
    binding = settings.local.data_dir / "ledger.binding.json"
    bound: str | None = None
    if binding.exists() and not settings.local.ledger_path:
        try:
            bound = str(json.loads(binding.read_text(encoding="utf-8")).get("organization") or "")
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"{binding} cannot be read ({exc}); remove it") from exc
    by_id = {o.id: o for o in orgs}
    if bound:
        if bound not in by_id:
            raise ConfigurationError(
                f"{settings.local.data_dir} holds the state of organization {bound} (its ledger is "
                f"bound to it), which is not configured ({_ids(orgs)}): add it to FUNDPIPE_ORGS "
                f"or move that state away"
            )
        return by_id[bound]
    if settings.service.org_id in by_id:
        return by_id[settings.service.org_id]
    if len(orgs) == 1:
        return orgs[0]
    raise ConfigurationError(
        f"{settings.local.data_dir} holds single-organization state (inbox, ledger, …) but "
        f"{len(orgs)} organizations are configured ({_ids(orgs)}) and nothing says whose it is: "
        f"set FUNDPIPE_ORG_ID to its organization, or move it into "
        f"{settings.local.data_dir / 'orgs' / '<org_id>'} yourself"
    )


def _ids(orgs: Sequence[Organization]) -> str:
    return ", ".join(o.folder for o in orgs)


def migrate_layout(settings: Settings, orgs: Sequence[Organization]) -> str | None:
    """Move single-organization state into its organization's folders; the sentence saying
    what moved where, or None when there was nothing to move.

    `settings` are the run's top-level settings (not an organization's). Raises
    ConfigurationError, before moving anything, when a name exists in both places or the
    owner cannot be told.
    """
    moves = legacy_items(settings)
    if not moves:
        return None
    org = _owner(settings, orgs)
    top = settings.local.data_dir
    org_dir, reports_dir = top / "orgs" / org.folder, top / "reports" / org.folder
    planned = [
        (
            old,
            reports_dir / rel.relative_to("reports")
            if rel.parts[0] == "reports"
            else org_dir / rel,
        )
        for old, rel in moves
    ]
    clashes = [new for _, new in planned if new.exists() or new.is_symlink()]
    if clashes:
        raise ConfigurationError(
            f"{top} holds single-organization state that would move into {org.folder}'s "
            f"folders, but {clashes[0]} already exists: nothing was moved. Merge the two by "
            f"hand (keep one ledger), then run again"
        )
    for old, new in planned:
        new.parent.mkdir(parents=True, exist_ok=True)
        old.rename(new)  # same filesystem: atomic, nothing copied
    for name in LEGACY_DIRS:
        folder = top / name
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    moved_state = sorted({rel.parts[0] for _, rel in moves if rel.parts[0] != "reports"})
    moved_reports = sorted(rel.name for _, rel in moves if rel.parts[0] == "reports")
    parts = []
    if moved_state:
        parts.append(f"{', '.join(moved_state)} into {org_dir}")
    if moved_reports:
        parts.append(f"reports {', '.join(moved_reports)} into {reports_dir}")
    return (
        f"moved the single-organization layout of {top} to organization {org.folder}: "
        + "; ".join(parts)
    )

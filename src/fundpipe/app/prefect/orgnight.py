"""One organization's night as the shells show it, typed: `OrgNight` (with its `NightFacts`),
built from `fundpipe.night.NightResult` by the child run, read by its artifacts
(`fundpipe.app.prefect.artifacts`), its publishing (`sharing`), its row of the night over every
organization (`nightsummary`) and `fundpipe run`. `as_json` is its `--json` form (a row's
``summary``), kept as it was when it was a dict.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fundpipe.app.prefect import oncall
from fundpipe.cents import format_cents
from fundpipe.night import NightException, NightReading

if TYPE_CHECKING:
    from fundpipe.night import NightResult
    from fundpipe.reports.publish import Published
    from fundpipe.submit.verdicts import FileOutcome

__all__ = ["NEEDS_REVIEW", "NightFacts", "OrgNight"]

#: The state name of a night that needs a person (state type COMPLETED): the badge the Prefect
#: UI shows, and the label `fundpipe run` and the parent's artifact show for it.
NEEDS_REVIEW = "Needs review"

#: How the service objects' mode reads to a person.
_MODES = {"test": "test mode", "live": "live mode", "not seen": "none seen"}


def _mode(*seen: bool | None) -> str:
    """ "live", "test" or "not seen", from the steps' `livemode`."""
    values = [v for v in seen if v is not None]
    if not values:
        return "not seen"
    return "live" if any(values) else "test"


@dataclass(frozen=True, slots=True)
class NightFacts:
    """The facts of one organization's night (the run summary's table)."""

    files_seen: int = 0
    #: a file is counted once: new (processed now) or already submitted (a no-op), never both
    files_processed: int = 0
    files_rejected: int = 0
    files_conflict_or_refused: int = 0
    files_already_submitted: int = 0
    distributions_submitted: int = 0
    cents_submitted: int = 0
    accounts_synced: int = 0
    distributions_synced: int = 0
    available_cents: int = 0
    obligations_cents: int = 0
    shortfall_cents: int = 0
    exceptions: int = 0
    #: "live", "test" or "not seen"
    service_objects: str = "not seen"
    warnings: int = 0

    @classmethod
    def of(cls, night: NightResult, warnings: int) -> NightFacts:
        """The facts of a typed night (every count an attribute of it, never re-counted)."""
        synced, summary = night.sync, night.reconcile.summary
        return cls(
            files_seen=night.files_seen,
            files_processed=night.files_processed,
            files_rejected=night.files_rejected,
            files_conflict_or_refused=len(night.in_state("conflict", "refused")),
            files_already_submitted=len(night.in_state("duplicate")),
            distributions_submitted=night.distributions_created,
            cents_submitted=night.cents_created,
            accounts_synced=synced.counts.get("financial_accounts", 0),
            distributions_synced=synced.counts.get("distributions", 0),
            available_cents=summary.available_cents,
            obligations_cents=summary.obligations_cents,
            shortfall_cents=summary.shortfall_cents,
            exceptions=summary.exceptions,
            service_objects=_mode(night.ingest.livemode, synced.livemode),
            warnings=warnings,
        )

    def items(self) -> list[tuple[str, int | str]]:
        """The facts as the `--json` output names them, in the table's order (money as
        dollars text)."""
        return [
            ("files seen", self.files_seen),
            ("files processed (new)", self.files_processed),
            ("files rejected", self.files_rejected),
            ("files in conflict or refused", self.files_conflict_or_refused),
            ("files already submitted (no-op)", self.files_already_submitted),
            ("distributions submitted", self.distributions_submitted),
            ("amount submitted", format_cents(self.cents_submitted)),
            ("accounts synced", self.accounts_synced),
            ("distributions synced", self.distributions_synced),
            ("depository available", format_cents(self.available_cents)),
            ("open obligations", format_cents(self.obligations_cents)),
            ("shortfall", format_cents(self.shortfall_cents)),
            ("exceptions", self.exceptions),
            ("service objects", self.service_objects),
            ("warnings", self.warnings),
        ]

    def plain(self) -> list[tuple[str, str]]:
        """The facts as a person reads them: capitalized labels, and the service objects' mode
        in words ("Service objects", "test mode"), never the raw `livemode` label."""
        rows = []
        for key, value in self.items():
            label = key[:1].upper() + key[1:]
            text = _MODES.get(str(value), str(value)) if key == "service objects" else str(value)
            rows.append((label, text))
        return rows


@dataclass(frozen=True)
class OrgNight(NightReading):
    """One organization's night as its artifacts, the parent and `fundpipe run` show it: small
    on purpose (a child run's result; the night's plan stays behind)."""

    organization: str
    as_of: date
    facts: NightFacts = field(default_factory=NightFacts)
    files: tuple[FileOutcome, ...] = ()
    workbook: Path | None = None
    parquet: Mapping[str, Path] = field(default_factory=dict)
    exception_counts: Mapping[str, int] = field(default_factory=dict)
    #: tonight's exceptions: opened, still open, resolved
    exceptions: tuple[NightException, ...] = ()
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    exit_code: int = 0
    #: where the night was published (`FUNDPIPE_REPORTS_URL`), else None
    published: Published | None = None

    @classmethod
    def of(cls, organization: str, night: NightResult) -> OrgNight:
        """The shells' view of a typed night."""
        warnings = list(night.ingest.warnings)
        warnings += [w for w in night.sync.warnings if w not in warnings]
        warnings += oncall.left_alone_lines(night.ingest)  # every inbox entry gets a word
        return cls(
            organization=organization,
            as_of=night.as_of,
            facts=NightFacts.of(night, len(warnings)),
            files=night.files,
            workbook=night.workbook,
            parquet=dict(night.parquet),
            exception_counts=dict(night.reconcile.summary.exception_counts),
            exceptions=night.exceptions,
            warnings=tuple(warnings),
            notes=tuple(night.ingest.notes),
            exit_code=int(night.exit_code),
        )

    @property
    def rejected(self) -> tuple[FileOutcome, ...]:
        """The files rejected tonight."""
        return self.in_state("rejected")

    @property
    def reports(self) -> dict[str, Path]:
        """The reports by label: the workbook, then each view's Parquet (``parquet <view>``)."""
        found = {"workbook": self.workbook} if self.workbook else {}
        return {**found, **{f"parquet {k}": v for k, v in self.parquet.items()}}

    def url_of(self, path: Path | str | None) -> str | None:
        """Where the night published a local file (None: not published)."""
        return self.published.url_of(path) if self.published is not None else None

    def as_json(self) -> dict[str, Any]:
        """The `--json` form (a row's ``summary``), unchanged since the dict it replaced."""
        from fundpipe.app.outcomes import file_dict

        return {
            "as_of": self.as_of.isoformat(),
            "facts": dict(self.facts.items()),
            "files": [file_dict(f) for f in self.files],
            "rejected_files": [
                {
                    "file": f.source_file,
                    "report": str(f.moved_to) if f.moved_to else None,
                    "message": f.message,
                }
                for f in self.rejected
            ],
            "reports": {k: str(v) for k, v in self.reports.items()},
            "exceptions": self.facts.exceptions,
            "exception_counts": dict(self.exception_counts),
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "exit_code": self.exit_code,
            "organization": self.organization,
            "open_exceptions": len(self.open_exceptions),
            "opened_ids": [e.id for e in self.opened_exceptions],
            "exception_list": [e.as_dict() for e in self.open_exceptions],
            "published": (
                {"folder": self.published.folder, "urls": dict(self.published.urls)}
                if self.published is not None
                else None
            ),
        }

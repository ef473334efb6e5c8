"""Local state and how the data path treats it: where the data directory, ledger, warehouse and
reports are, and the ingest / sync / reconcile choices of one organization's night."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

__all__ = ["LocalPathSettings", "PipelineSettings", "iana_zone"]


class LocalPathSettings(BaseModel):
    """Where the state lives: the data directory, its files, and the reports."""

    data_dir: Path = Path("data")
    warehouse_path: Path | None = None
    ledger_path: Path | None = None
    reports_dir: Path | None = Field(
        default=None,
        description="Where reconciliation reports go (default <data_dir>/reports); an "
        "organization's settings point it at data/reports/<org_id>.",
    )
    reports_url: str | None = Field(
        default=None,
        description="Shared reports location (a folder path on every machine, or an fsspec URL "
        "such as s3://bucket/reports): each organization's night publishes its reports there "
        "(<url>/<org>/...), the nightly run builds the morning view across organizations from "
        "them (<url>/morning/<date>/), and run artifacts link them there.",
    )

    @property
    def warehouse_file(self) -> Path:
        """The DuckDB warehouse file."""
        return self.warehouse_path or self.data_dir / "warehouse.duckdb"

    @property
    def ledger_file(self) -> Path:
        """The DuckDB submission ledger file."""
        return self.ledger_path or self.data_dir / "ledger.duckdb"

    @property
    def reports_folder(self) -> Path:
        """Where the reports of these settings go: `reports_dir`, else `<data_dir>/reports`."""
        return self.reports_dir or self.data_dir / "reports"


class PipelineSettings(BaseModel):
    """The data path's choices: reading sheets, ingesting the inbox, syncing, reconciling."""

    require_funds: bool = False
    date_order: Literal["mdy", "dmy"] | None = Field(
        default=None,
        description="How sheets write dates with day and month in figures: mdy (12/15/2026) or "
        "dmy (15/12/2026). Unset: a date such as 03/04/2027 that neither its numbers nor its "
        "column settles is a row error naming both readings.",
    )
    reporting_timezone: str = Field(
        default="UTC",
        description="IANA zone the reconciliation's as-of dates are read in: `reconcile --as-of "
        "D` shows the books at the end of D there (FUNDPIPE_REPORTING_TIMEZONE).",
    )
    one_person_close: bool = Field(
        default=False,
        description="Allow one person to prepare and review a month's close (the same name or "
        "the same operating-system user); the review records that it was allowed. Default: "
        "refused (FUNDPIPE_ONE_PERSON_CLOSE).",
    )
    full_sync_days: float = Field(
        default=7.0,
        gt=0,
        description="Days after which a sync walks the entity, contact and distribution lists "
        "whole again instead of stopping at what the warehouse already holds (so an edit the "
        "service made to an old object is picked up within that time).",
    )
    inbox_settle_s: float = Field(
        default=1.0,
        ge=0,
        description="Seconds a file in the inbox must have been left unchanged before it is "
        "picked up (0 takes every file at once; for tests and scripted drops).",
    )
    inbox_lock_wait_s: float = Field(
        default=0.0,
        ge=0,
        description="Seconds an ingest waits for another run holding the inbox lock before it "
        "gives up (exit 4). 0 for the CLI: say so at once; the Prefect flows wait (a nightly "
        "run and an inbox run may start together).",
    )
    submit_batch_size: int = Field(
        default=100,
        ge=1,
        le=100,
        description="Distributions per create request (the service accepts at most 100, and "
        "each request is atomic at the service).",
    )

    @field_validator("date_order", mode="before")
    @classmethod
    def _normalise_date_order(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip().lower()
            if value not in ("", "mdy", "dmy"):
                raise ValueError("expected mdy (12/15/2026) or dmy (15/12/2026), or unset")
            return value or None
        return value

    @field_validator("reporting_timezone", mode="after")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        return iana_zone(value)


def iana_zone(value: str) -> str:
    """`value` if it names an IANA time zone; else ValueError saying what is expected."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError("expected an IANA time zone, e.g. America/New_York") from None
    return value

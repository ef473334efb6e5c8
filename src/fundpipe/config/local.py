"""Local state and how the data path treats it: where the data directory, ledger, warehouse and
reports are, and the ingest / sync / reconcile choices of one organization's night."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

__all__ = ["LocalPathSettings", "PipelineSettings", "iana_zone"]


def user_cache_dir() -> Path | None:
    """`$XDG_CACHE_HOME/fundpipe`, else `~/.cache/fundpipe`: what one machine's runs share;
    None (no cache) when the user has no home directory to speak of."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not Path(base).is_absolute():  # unset or relative: the XDG default
        try:
            base = str(Path.home() / ".cache")
        except (RuntimeError, KeyError):  # no HOME and no password entry (some containers)
            return None
    return Path(base) / "fundpipe"


class LocalPathSettings(BaseModel):
    """Where the state lives: the data directory, its files, and the reports."""

    data_dir: Path = Path("data")
    warehouse_path: Path | None = None
    ledger_path: Path | None = None
    cache_dir: Path | None = Field(
        default_factory=user_cache_dir,
        description="What runs on this machine share and can rebuild (default "
        "$XDG_CACHE_HOME/fundpipe or ~/.cache/fundpipe; none without a home directory): the "
        "empty warehouse of the current schema, copied by a first sync instead of applying "
        "every migration again.",
    )
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
    reports_public_url: str | None = Field(
        default=None,
        description="The http(s) address FUNDPIPE_REPORTS_URL is served under (a web server "
        "over the folder, the bucket's public or CDN URL): report links in the Prefect UI open "
        "there. Without it, only an http(s) FUNDPIPE_REPORTS_URL gives links; other reports are "
        "shown as a path and the machine it is on.",
    )

    record_url: str | None = Field(
        default=None,
        description="The durable record (a folder on other storage, or an fsspec URL such as "
        "s3://bucket/record, az://…, gs://…): each organization's decisions, written when made, "
        "and a verified snapshot after each night (<url>/<org>/...), from which `fundpipe "
        "restore` rebuilds its ledger and warehouse. Default <data_dir>/record/<org>.",
    )
    record_keep_nights: int = Field(
        default=14,
        ge=1,
        description="Nightly snapshots kept in the durable record (the newest ones); the "
        "snapshot at each close is kept forever.",
    )
    record_lock_expiry_s: float = Field(
        default=300.0,
        gt=0,
        description="Seconds an organization's lease in the durable record (one machine runs "
        "its night at a time) lasts unless renewed: its holder renews it every third of that "
        "while it runs, and a night on another machine takes it over once it lapsed (a machine "
        "that died holding it); on the same machine a dead holder's lease is taken over at once.",
    )

    @property
    def record_location(self) -> str:
        """The organization's durable record: `record_url` (`Settings.for_org` makes it
        `<url>/<org>`, by default `<data_dir>/record/<org>`), else `<data_dir>/record`."""
        return self.record_url or str(self.data_dir / "record")

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
    materiality: int = Field(
        default=0,
        ge=0,
        description="Dollars (e.g. 250 or 250.00; held as cents) below which an unexplained "
        "balance difference is listed on the Roll-forward but opens no exception "
        "(FUNDPIPE_MATERIALITY; an organization's `materiality` in FUNDPIPE_ORGS wins). "
        "0: every difference is an exception.",
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
    inbox_url: str | None = Field(
        default=None,
        description="The inbox on the team's storage: a folder or fsspec URL with {org} for the "
        "organization, e.g. s3://fund-ops/orgs/{org}/inbox; processing/, processed/, rejected/ "
        "and claims/ are prefixes beside it. Unset: the local data/orgs/<org>/inbox "
        "(FUNDPIPE_INBOX_URL).",
    )
    inbox_poll_s: float = Field(
        default=60.0,
        gt=0,
        description="Seconds between two listings of FUNDPIPE_INBOX_URL by `fundpipe serve`.",
    )
    inbox_lease_s: float = Field(
        default=900.0,
        gt=0,
        description="Seconds a worker's claim on a file of FUNDPIPE_INBOX_URL holds; a claim "
        "whose worker died is taken over by another after it.",
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

    @field_validator("materiality", mode="before")
    @classmethod
    def _materiality_in_cents(cls, value: Any) -> Any:
        return dollars_to_cents(value) if isinstance(value, str) else value

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


def dollars_to_cents(text: str) -> int:
    """Dollars written by a person (``250``, ``250.00``, ``$1,000.50``) as integer cents;
    ValueError saying what is expected otherwise (a negative, a third decimal, not a number)."""
    from decimal import Decimal, InvalidOperation

    cleaned = text.strip().replace(",", "").removeprefix("$").strip() or "0"
    try:
        amount = Decimal(cleaned)
    except InvalidOperation:
        raise ValueError(f"expected dollars such as 250 or 250.00, not {text!r}") from None
    cents = amount * 100
    if not amount.is_finite() or amount < 0 or cents != cents.to_integral_value():
        raise ValueError(f"expected dollars (0 or more, at most 2 decimals), not {text!r}")
    return int(cents)

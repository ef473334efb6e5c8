"""Typed configuration, read from `FUNDPIPE_*` environment variables and an optional `.env`.

Settings are built at the entry points (CLI commands, flows) and passed down; nothing reads the
environment deep inside a function. With no `FUNDPIPE_BASE_URL`, fundpipe runs against the
embedded sandbox (see `fundpipe.app.embedded`) with the demo client's credentials.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

if TYPE_CHECKING:
    from fundpipe.client._config import ClientConfig

#: Paths of the operations the interface does not show (DESIGN, "ours"): guesses the sandbox
#: serves, overridable one by one with FUNDPIPE_PATHS (JSON object, e.g. '{"vehicles": "/v2/funds"}').
DEFAULT_PATHS = {
    "vehicles": "/v1/vehicles",
    "vehicle": "/v1/vehicles/{veh_id}",
    "organizations": "/v1/organizations",
    "organization": "/v1/organizations/{org_id}",
    "financial_accounts": "/v1/financial_accounts",
    "entity_contacts": "/v1/entities/{ent_id}/contacts",
}

#: Credentials of the embedded sandbox's demo organization (not secrets: the sandbox seeds them).
DEMO_CLIENT_ID = "demo-client"
DEMO_CLIENT_SECRET = "demo-secret"  # noqa: S105 - public demo credential of the local sandbox
DEMO_ORG_ID = "org_demo"

#: Folder name of the organization's state when its id is not known (a client acting for its
#: one organization, without `X-Organization-Id`, and no organization read).
OWN_ORG_FOLDER = "default"


@dataclass(frozen=True, slots=True)
class Organization:
    """One organization fundpipe runs for (`FUNDPIPE_ORGS`, `FUNDPIPE_ORGS_FILE`, or the
    service's organization read): its id, display name, and optionally its own service URL,
    OAuth client id and the name of the Prefect Secret block holding that client's secret, and
    the work queue its `org-night` run goes to (`FUNDPIPE_FAN_OUT=deployments`; None: the
    deployment's own).

    `id` None: the client's own organization, not named (no `X-Organization-Id` header).
    """

    id: str | None
    name: str | None = None
    base_url: str | None = None
    client_id: str | None = None
    secret_block: str | None = None
    work_queue: str | None = None

    @property
    def folder(self) -> str:
        """The name of its folders under `data/orgs/` and `data/reports/`."""
        return self.id or OWN_ORG_FOLDER

    @property
    def label(self) -> str:
        """How people are told about it: the id, with the display name when there is one."""
        ident = self.id or "the client's own organization"
        return f"{ident} ({self.name})" if self.name and self.name != self.id else ident


class Settings(BaseSettings):
    """The effective configuration of one fundpipe process."""

    model_config = SettingsConfigDict(
        env_prefix="FUNDPIPE_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
    )

    # --- the service -------------------------------------------------------------------------
    base_url: str | None = Field(
        default=None,
        description="Service base URL; unset → start the embedded sandbox on loopback.",
    )
    token_url: str | None = Field(
        default=None, description="Token endpoint host; defaults to the base URL."
    )
    client_id: str | None = Field(default=None, description="OAuth client id.")
    client_secret: SecretStr | None = Field(default=None, description="OAuth client secret.")
    client_secret_block: str | None = Field(
        default=None,
        description="Name of a Prefect Secret block holding the client secret, used when "
        "FUNDPIPE_CLIENT_SECRET is unset (see fundpipe.app.prefect.secrets.with_secret_block).",
    )
    org_id: str | None = Field(default=None, description="X-Organization-Id to act for.")
    orgs: str | None = Field(
        default=None,
        description='The organizations to run for: a JSON list of objects ({"id", "name", '
        '"base_url", "client_id", "secret_block"}) or ids, comma separated '
        "(org_a,org_b). Unset: FUNDPIPE_ORGS_FILE, else the organizations the client may act "
        "for (the organization read), else FUNDPIPE_ORG_ID.",
    )
    orgs_file: Path | None = Field(
        default=None,
        description="A TOML file listing the organizations as [[organizations]] tables (the "
        "keys of FUNDPIPE_ORGS); used when FUNDPIPE_ORGS is unset.",
    )
    scopes: str | None = Field(
        default=None,
        description="OAuth scopes to request, space separated (e.g. 'entities:write "
        "distributions:*'); unset → the token request sends no `scope` and the service grants "
        "the client's own.",
    )

    paths: dict[str, str] = Field(
        default_factory=lambda: dict(DEFAULT_PATHS),
        description="Paths of the guessed (optional) operations, by name; names not given keep "
        "DESIGN's defaults (see DEFAULT_PATHS).",
    )

    vehicles: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Vehicle ids (veh_...) to read balances of besides those the sheets and the "
        "ledger name (FUNDPIPE_VEHICLES, comma or space separated); the service's vehicle list "
        "is not a documented operation.",
    )
    sandbox_strict: bool = Field(
        default=False,
        description="Embedded sandbox only: serve only the documented operations "
        "(fundpipe sandbox --strict-interface).",
    )
    sandbox_public_forms: bool = Field(
        default=False,
        description="Embedded sandbox only: answer in the public spec's forms "
        "(fundpipe sandbox --public-forms).",
    )

    service_name: str | None = Field(
        default=None,
        description="What the ledger binds its data directory to (default: the base URL; the "
        "embedded sandbox calls itself 'embedded sandbox'). Set it to keep a ledger when only "
        "the service's URL changes.",
    )
    livemode: bool | None = Field(
        default=None,
        description="The livemode the service's objects must have (FUNDPIPE_LIVEMODE=true for "
        "production, false for a sandbox); a run that sees the other stops before creating "
        "anything. Unset: no check (the embedded sandbox expects false).",
    )

    # --- HTTP behaviour ----------------------------------------------------------------------
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 30.0
    token_leeway_s: float = 60.0
    max_attempts: int | None = Field(
        default=None, ge=1, description="Optional bound on attempts (unset: the deadline decides)."
    )
    retry_deadline_s: float = Field(default=120.0, gt=0)
    retry_after_cap_s: float = Field(default=60.0, gt=0)
    backoff_initial_s: float = Field(default=0.2, gt=0)
    backoff_max_s: float = Field(default=30.0, gt=0)
    rate_limit_per_s: float = Field(default=9.0, gt=0, description="Client-side request rate.")
    max_concurrency: int = Field(default=8, ge=1, description="Concurrent requests in flight.")
    ca_bundle: Path | None = Field(
        default=None,
        description="CA bundle (PEM) that replaces the default trust store to verify the "
        "service's TLS certificate; verification itself cannot be turned off.",
    )

    # --- several organizations (fundpipe.app.prefect.fanout) -----------------------------------------
    fan_out: str = Field(
        default="subflows",
        pattern="^(subflows|deployments)$",
        description="How the nightly run starts one run per organization: `subflows` (in this "
        "process, concurrently) or `deployments` (run_deployment of `org-night/org-night`, "
        "so any worker of the work pool takes one).",
    )
    org_concurrency: int = Field(
        default=2,
        ge=1,
        description="Organizations talking to one service host at once (a Prefect global "
        "concurrency limit `fundpipe-service-<host>`, created when missing).",
    )
    host_rate_limit_per_s: float | None = Field(
        default=None,
        gt=0,
        description="Requests per second one service host allows all organizations together; "
        "each organization's client then runs at min(FUNDPIPE_RATE_LIMIT_PER_S, this / the "
        "organizations that may talk to the host at once). Unset: the service limits each "
        "client and organization on its own, and each keeps FUNDPIPE_RATE_LIMIT_PER_S.",
    )

    # --- local state -------------------------------------------------------------------------
    data_dir: Path = Path("data")
    warehouse_path: Path | None = None
    ledger_path: Path | None = None
    reports_dir: Path | None = Field(
        default=None,
        description="Where reconciliation reports go (default <data_dir>/reports); an "
        "organization's settings point it at data/reports/<org_id>.",
    )
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
    full_sync_days: float = Field(
        default=7.0,
        gt=0,
        description="Days after which a sync walks the entity, contact and distribution lists "
        "whole again instead of stopping at what the warehouse already holds (so an edit the "
        "service made to an old object is picked up within that time).",
    )

    reports_url: str | None = Field(
        default=None,
        description="Shared reports location (a folder path on every machine, or an fsspec URL "
        "such as s3://bucket/reports): each organization's night publishes its reports there "
        "(<url>/<org>/...), the nightly run builds the morning view across organizations from "
        "them (<url>/morning/<date>/), and run artifacts link them there.",
    )

    prefect_port: int = Field(
        default=4200,
        ge=1,
        le=65535,
        description="Port of the Prefect server `fundpipe serve` starts on 127.0.0.1 when "
        "PREFECT_API_URL is not set.",
    )

    # --- submission (fundpipe ingest) ---------------------------------------------------------
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

    # --- schedules (fundpipe serve, flows/prefect.yaml) -----------------------------------------
    nightly_cron: str = Field(
        default="30 1 * * *", description="When the nightly deployment runs (cron)."
    )
    nightly_timezone: str = Field(
        default="America/New_York",
        description="IANA zone the nightly cron and the inbox interval are read in.",
    )
    inbox_interval_s: int = Field(
        default=300, ge=1, description="Seconds between two runs of the inbox deployment."
    )
    complete_by: str = Field(
        default="06:00",
        pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$",
        description="HH:MM in the nightly's timezone by which every organization's night must "
        "have completed: when the night-check deployment runs, and the default of `fundpipe "
        "alerts install --complete-by`.",
    )

    @field_validator("date_order", mode="before")
    @classmethod
    def _normalise_date_order(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip().lower()
            return value or None
        return value

    @field_validator("scopes", mode="before")
    @classmethod
    def _normalise_scopes(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            value = " ".join(str(s) for s in value)
        if isinstance(value, str):
            return " ".join(value.replace(",", " ").split()) or None
        return value

    @field_validator("reporting_timezone", mode="after")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"{value!r} is not an IANA time zone (e.g. America/New_York)"
            ) from None
        return value

    @field_validator("vehicles", mode="before")
    @classmethod
    def _split_vehicles(cls, value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(",", " ").split()
        return value

    @field_validator("paths", mode="after")
    @classmethod
    def _complete_paths(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(DEFAULT_PATHS))
        if unknown:
            msg = f"unknown operation names {unknown}; known: {sorted(DEFAULT_PATHS)}"
            raise ValueError(msg)
        merged = {**DEFAULT_PATHS, **value}
        for name, path in merged.items():
            placeholders = set(re.findall(r"{(\w+)}", DEFAULT_PATHS[name]))
            if not path.startswith("/") or set(re.findall(r"{(\w+)}", path)) != placeholders:
                msg = f"path of {name!r} must start with / and hold {sorted(placeholders)}"
                raise ValueError(msg)
        return merged

    @property
    def night_check_cron(self) -> str:
        """The night-check deployment's cron: every day at `complete_by`."""
        hour, minute = (int(part) for part in self.complete_by.split(":"))
        return f"{minute} {hour} * * *"

    @property
    def embedded(self) -> bool:
        """True when no service is configured and the embedded sandbox is used."""
        return not self.base_url

    @property
    def effective_token_url(self) -> str | None:
        """Where tokens are fetched: `token_url`, else the base URL."""
        return self.token_url or self.base_url

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

    @property
    def service_identity(self) -> str:
        """The service the ledger binds to: `service_name`, else the base URL."""
        return self.service_name or (self.base_url or "").rstrip("/")

    def client_config(self) -> ClientConfig:
        """The service client's own configuration (`fundpipe.client.ClientConfig`) from these
        settings: service, credentials, organization, paths and the HTTP policy."""
        from fundpipe.client._config import ClientConfig

        return ClientConfig(
            base_url=self.base_url,
            token_url=self.token_url,
            client_id=self.client_id,
            client_secret=self.client_secret,
            client_secret_block=self.client_secret_block,
            scopes=self.scopes,
            org_id=self.org_id,
            paths=dict(self.paths),
            connect_timeout_s=self.connect_timeout_s,
            read_timeout_s=self.read_timeout_s,
            token_leeway_s=self.token_leeway_s,
            retry_deadline_s=self.retry_deadline_s,
            backoff_initial_s=self.backoff_initial_s,
            backoff_max_s=self.backoff_max_s,
            retry_after_cap_s=self.retry_after_cap_s,
            max_attempts=self.max_attempts,
            rate_limit_per_s=self.rate_limit_per_s,
            max_concurrency=self.max_concurrency,
            ca_bundle=self.ca_bundle,
        )

    def with_service(self, base_url: str) -> Settings:
        """A copy pointed at `base_url`, filling the demo credentials where none are set."""
        return self.model_copy(
            update={
                "base_url": base_url,
                "client_id": self.client_id or DEMO_CLIENT_ID,
                "client_secret": self.client_secret or SecretStr(DEMO_CLIENT_SECRET),
                "org_id": self.org_id or DEMO_ORG_ID,
            }
        )

    def for_org(self, org: Organization, *, several: bool) -> Settings:
        """The settings of one organization: its own X-Organization-Id, service URL, client id
        and secret block when it names them, its state in `<data_dir>/orgs/<org>/` and its
        reports in `<data_dir>/reports/<org>/`.

        `several`: more than one organization runs. Explicit `FUNDPIPE_LEDGER_PATH` /
        `FUNDPIPE_WAREHOUSE_PATH` name one organization's files: with several they are refused.
        """
        from fundpipe.errors import ConfigurationError

        if several and (self.ledger_path or self.warehouse_path):
            raise ConfigurationError(
                "FUNDPIPE_LEDGER_PATH / FUNDPIPE_WAREHOUSE_PATH name one organization's files, "
                "but several organizations are configured: unset them (each organization keeps "
                "its ledger and warehouse in data/orgs/<org_id>/)"
            )
        update: dict[str, Any] = {
            "org_id": org.id,
            "data_dir": self.data_dir / "orgs" / org.folder,
            "reports_dir": self.reports_folder / org.folder,
        }
        if self.reports_url:
            update["reports_url"] = f"{self.reports_url.rstrip('/')}/{org.folder}"
        if org.base_url:
            update["base_url"] = org.base_url
        if org.client_id:
            update["client_id"] = org.client_id
        if org.secret_block:
            update.update(client_secret=None, client_secret_block=org.secret_block)
        return self.model_copy(update=update)

    def redacted(self) -> dict[str, Any]:
        """The settings as a dict with every secret replaced by `**********`."""
        out = self.model_dump(mode="json")
        if self.client_secret is not None:
            out["client_secret"] = "**********"  # noqa: S105 - the redaction marker itself
        return out


def require_service(settings: Settings, transport: object | None = None) -> None:
    """Raise :class:`fundpipe.errors.ConfigurationError` unless ``settings`` name a service.

    Library entry points (``ingest``, ``sync``) never start the embedded sandbox: only
    ``fundpipe.app`` does (``fundpipe.app.embedded.service``). A test's ``transport`` stands in
    for the service.
    """
    from fundpipe.errors import ConfigurationError

    if settings.embedded and transport is None:
        raise ConfigurationError(
            "no service configured: set FUNDPIPE_BASE_URL (the CLI and the flows start the "
            "embedded sandbox when it is unset)"
        )

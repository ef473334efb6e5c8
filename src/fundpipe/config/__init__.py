"""Typed configuration, read from `FUNDPIPE_*` environment variables and an optional `.env`.

One `Settings`, composed of groups each defined in a module of its own (attribute access and the
environment variable names are the same whichever group a field belongs to): `service` (the
service, credentials, organizations; the embedded sandbox's switches), `http` (the client's HTTP
policy, handed to the client as its own `ClientConfig` by `Settings.client_config()`), `local`
(where the state lives; the data path's choices), `orchestration` (schedules, fan-out, the Prefect
server: owned by the Prefect shell), and `organization` (one organization fundpipe runs for).

Settings are built at the entry points (CLI commands, flows) and passed down; nothing reads the
environment deep inside a function. With no `FUNDPIPE_BASE_URL`, fundpipe runs against the
embedded sandbox (see `fundpipe.app.embedded`) with the demo client's credentials.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from fundpipe.config.http import HttpPolicySettings
from fundpipe.config.local import LocalPathSettings, PipelineSettings
from fundpipe.config.orchestration import OrchestrationSettings
from fundpipe.config.organization import OWN_ORG_FOLDER, Organization
from fundpipe.config.service import (
    DEFAULT_PATHS,
    DEMO_CLIENT_ID,
    DEMO_CLIENT_SECRET,
    DEMO_ORG_ID,
    EmbeddedSandboxSettings,
    ServiceSettings,
)

if TYPE_CHECKING:
    from fundpipe.client._config import ClientConfig

__all__ = [
    "DEFAULT_PATHS",
    "DEMO_CLIENT_ID",
    "DEMO_CLIENT_SECRET",
    "DEMO_ORG_ID",
    "OWN_ORG_FOLDER",
    "Organization",
    "Settings",
    "require_service",
]


class Settings(
    # listed last to first: `fundpipe config` shows the service first, orchestration last
    OrchestrationSettings,
    PipelineSettings,
    LocalPathSettings,
    HttpPolicySettings,
    EmbeddedSandboxSettings,
    ServiceSettings,
    BaseSettings,
):
    """The effective configuration of one fundpipe process: every group's fields, each read
    from `FUNDPIPE_<FIELD>` (the groups only say where a field is defined)."""

    model_config = SettingsConfigDict(
        env_prefix="FUNDPIPE_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
    )

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
        """A copy pointed at `base_url`, filling the demo credentials where none are set (a
        secret named by a Secret block counts as set: the entry point's loader fills it)."""
        named = self.client_secret is not None or bool(self.client_secret_block)
        return self.model_copy(
            update={
                "base_url": base_url,
                "client_id": self.client_id or DEMO_CLIENT_ID,
                "client_secret": self.client_secret if named else SecretStr(DEMO_CLIENT_SECRET),
                "org_id": self.org_id or DEMO_ORG_ID,
            }
        )

    def for_org(self, org: Organization, *, several: bool) -> Settings:
        """The settings of one organization: its own X-Organization-Id, service URL, client id
        and secret block when it names them, its state in `<data_dir>/orgs/<org>/`, its
        reports in `<data_dir>/reports/<org>/` and its durable record in
        `<FUNDPIPE_RECORD_URL or data_dir/record>/<org>`. Entry points call `fundpipe.orgs.org_settings`,
        which finds the organization, calls this and loads the secret.

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
            "org_name": org.name or self.org_name,
            "data_dir": self.data_dir / "orgs" / org.folder,
            "reports_dir": self.reports_folder / org.folder,
        }
        if self.reports_url:
            update["reports_url"] = f"{self.reports_url.rstrip('/')}/{org.folder}"
        if self.reports_public_url:
            update["reports_public_url"] = f"{self.reports_public_url.rstrip('/')}/{org.folder}"
        record = self.record_url or str(self.data_dir / "record")
        update["record_url"] = f"{record.rstrip('/')}/{org.folder}"
        if org.base_url:
            update["base_url"] = org.base_url
        if org.client_id:
            update["client_id"] = org.client_id
        if org.secret_block:
            update.update(client_secret=None, client_secret_block=org.secret_block)
        if org.materiality is not None:
            update["materiality"] = org.materiality
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

"""Typed configuration, read from `FUNDPIPE_*` environment variables and an optional `.env`.

One `Settings`, made of groups, each a model defined in a module of its own and read as an
attribute of the settings (`settings.http.retry_deadline_s`); a field's environment variable is
`FUNDPIPE_<FIELD>` whichever group it is in (`FUNDPIPE_RETRY_DEADLINE_S`):

- `service` (`ServiceSettings`): the service, credentials, organizations, scopes, paths;
- `sandbox` (`EmbeddedSandboxSettings`): how the embedded sandbox answers;
- `http` (`fundpipe.clientpolicy.HttpPolicy`): the client's HTTP policy, the very model the
  client takes: `Settings.client_config()` hands it over as it is, in a `ClientConfig` with the
  service's fields;
- `local` (`LocalPathSettings`): where the state lives (data directory, ledger, warehouse,
  reports, the durable record);
- `pipeline` (`PipelineSettings`): the data path's choices (dates, time zone, materiality, the
  inbox, batches);
- `orchestration` (`OrchestrationSettings`): schedules, fan-out, the Prefect server (owned by
  the Prefect shell).

`Settings()` reads the environment; `Settings(http={"retry_deadline_s": 1})` sets fields of a
group (the others still from the environment), and `grouped(data_dir=…, orgs=…)` puts field
names in their groups for it. `settings.updated(local={"data_dir": p})` is a copy with some
fields replaced. `organization` (`Organization`) is one organization fundpipe runs for; one
organization's settings come from `fundpipe.orgs.org_settings`.

Settings are built once at each entry point (a CLI command, a flow) and passed down; nothing
reads the environment deep inside a function. With no `FUNDPIPE_BASE_URL`, fundpipe runs
against the embedded sandbox (see `fundpipe.app.embedded`) with the demo client's credentials.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from fundpipe.clientpolicy import HttpPolicy
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
    from fundpipe.client import ClientConfig

__all__ = [
    "DEFAULT_PATHS",
    "DEMO_CLIENT_ID",
    "DEMO_CLIENT_SECRET",
    "DEMO_ORG_ID",
    "GROUPS",
    "OWN_ORG_FOLDER",
    "Organization",
    "Settings",
    "grouped",
    "require_service",
]

#: The groups of `Settings`, by attribute, in the order `fundpipe config` shows them.
GROUPS: Mapping[str, type[BaseModel]] = {
    "service": ServiceSettings,
    "sandbox": EmbeddedSandboxSettings,
    "http": HttpPolicy,
    "local": LocalPathSettings,
    "pipeline": PipelineSettings,
    "orchestration": OrchestrationSettings,
}

#: Each field's group: `FIELD_GROUPS["retry_deadline_s"] == "http"`.
FIELD_GROUPS: Mapping[str, str] = {
    field: group for group, model in GROUPS.items() for field in model.model_fields
}

#: Every variable is `FUNDPIPE_<FIELD>`, whichever group the field is in.
ENV_PREFIX = "FUNDPIPE_"


def grouped(**fields: Any) -> dict[str, Any]:
    """`Settings`' keyword arguments from field names, each put in its group:
    ``Settings(**grouped(data_dir=p, orgs="a,b"))`` is ``Settings(local={"data_dir": p},
    service={"orgs": "a,b"})``. A group's name passes through (its fields merged), and so does
    a pydantic-settings argument such as ``_env_file``; an unknown name is a TypeError."""
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if name in GROUPS:
            out.setdefault(name, {}).update(value)
        elif name in FIELD_GROUPS:
            out.setdefault(FIELD_GROUPS[name], {})[name] = value
        elif name.startswith("_"):
            out[name] = value
        else:
            raise TypeError(f"no setting {name!r}")
    return out


class _GroupedSource(PydanticBaseSettingsSource):
    """The environment (or `.env`) read group by group: each group's fields from their
    `FUNDPIPE_<FIELD>` variables, parsed as pydantic-settings parses them (JSON for a dict)."""

    def __init__(self, settings_cls: type[BaseSettings], env_file: Any | None) -> None:
        super().__init__(settings_cls)
        self._env_file = env_file

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        """Unused: `__call__` reads whole groups."""
        return None, field_name, False

    def _source(self, model: type[BaseModel]) -> PydanticBaseSettingsSource:
        settings_cls: Any = model  # the sources read only its fields and model_config
        if self._env_file is None:
            return EnvSettingsSource(settings_cls, case_sensitive=False, env_prefix=ENV_PREFIX)
        return DotEnvSettingsSource(
            settings_cls,
            env_file=self._env_file,
            env_file_encoding="utf-8",
            dotenv_filtering="only_existing",
            case_sensitive=False,
            env_prefix=ENV_PREFIX,
        )

    def __call__(self) -> dict[str, Any]:
        """Each group's values found, by group."""
        out = {name: self._source(model)() for name, model in GROUPS.items()}
        return {name: values for name, values in out.items() if values}


class Settings(BaseSettings):
    """The effective configuration of one fundpipe process, in groups (see the module's
    docstring); each field read from `FUNDPIPE_<FIELD>`."""

    model_config = SettingsConfigDict(
        env_file=".env",
        env_file_encoding="utf-8",
        extra="forbid",
    )

    service: ServiceSettings = Field(default_factory=ServiceSettings)
    sandbox: EmbeddedSandboxSettings = Field(default_factory=EmbeddedSandboxSettings)
    http: HttpPolicy = Field(default_factory=HttpPolicy)
    local: LocalPathSettings = Field(default_factory=LocalPathSettings)
    pipeline: PipelineSettings = Field(default_factory=PipelineSettings)
    orchestration: OrchestrationSettings = Field(default_factory=OrchestrationSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments first, then the environment, then `.env`, each read group by group."""
        env_file = getattr(dotenv_settings, "env_file", None)
        return (
            init_settings,
            _GroupedSource(settings_cls, None),
            *([_GroupedSource(settings_cls, env_file)] if env_file else []),
        )

    def updated(self, **groups: Mapping[str, Any]) -> Settings:
        """A copy with some fields of some groups replaced, e.g.
        ``settings.updated(local={"data_dir": p}, http={"max_attempts": 1})`` (not validated,
        like `model_copy`); an unknown group or field is a TypeError."""
        update: dict[str, BaseModel] = {}
        for name, fields in groups.items():
            if name not in GROUPS:
                raise TypeError(f"no settings group {name!r}; groups: {list(GROUPS)}")
            group: BaseModel = getattr(self, name)
            unknown = sorted(set(fields) - set(type(group).model_fields))
            if unknown:
                raise TypeError(f"no setting {unknown} in group {name!r}")
            update[name] = group.model_copy(update=dict(fields))
        return self.model_copy(update=update)

    def client_config(self) -> ClientConfig:
        """The service client's own configuration (`fundpipe.client.ClientConfig`): the `http`
        group as it is (the same `HttpPolicy`), with the service, credentials, organization and
        paths."""
        from fundpipe.client import ClientConfig

        service = self.service
        return ClientConfig(
            base_url=service.base_url,
            token_url=service.token_url,
            client_id=service.client_id,
            client_secret=service.client_secret,
            client_secret_block=service.client_secret_block,
            scopes=service.scopes,
            org_id=service.org_id,
            paths=dict(service.paths),
            http=self.http,
        )

    def with_service(self, base_url: str) -> Settings:
        """A copy pointed at `base_url`, filling the demo credentials where none are set (a
        secret named by a Secret block counts as set: the entry point's loader fills it)."""
        service = self.service
        named = service.client_secret is not None or bool(service.client_secret_block)
        return self.updated(
            service={
                "base_url": base_url,
                "client_id": service.client_id or DEMO_CLIENT_ID,
                "client_secret": service.client_secret if named else SecretStr(DEMO_CLIENT_SECRET),
                "org_id": service.org_id or DEMO_ORG_ID,
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

        local = self.local
        if several and (local.ledger_path or local.warehouse_path):
            raise ConfigurationError(
                "FUNDPIPE_LEDGER_PATH / FUNDPIPE_WAREHOUSE_PATH name one organization's files, "
                "but several organizations are configured: unset them (each organization keeps "
                "its ledger and warehouse in data/orgs/<org_id>/)"
            )
        service: dict[str, Any] = {
            "org_id": org.id,
            "org_name": org.name or self.service.org_name,
        }
        paths: dict[str, Any] = {
            "data_dir": local.data_dir / "orgs" / org.folder,
            "reports_dir": local.reports_folder / org.folder,
        }
        if local.reports_url:
            paths["reports_url"] = f"{local.reports_url.rstrip('/')}/{org.folder}"
        if local.reports_public_url:
            paths["reports_public_url"] = f"{local.reports_public_url.rstrip('/')}/{org.folder}"
        record = local.record_url or str(local.data_dir / "record")
        paths["record_url"] = f"{record.rstrip('/')}/{org.folder}"
        if org.base_url:
            service["base_url"] = org.base_url
        if org.client_id:
            service["client_id"] = org.client_id
        if org.secret_block:
            service.update(client_secret=None, client_secret_block=org.secret_block)
        pipeline: dict[str, Any] = {}
        if org.materiality is not None:
            pipeline["materiality"] = org.materiality
        return self.updated(service=service, local=paths, pipeline=pipeline)

    def redacted(self) -> dict[str, Any]:
        """The settings as a dict of groups (the service first, orchestration last) with every
        secret replaced by `**********`."""
        out = self.model_dump(mode="json")
        if self.service.client_secret is not None:
            out["service"]["client_secret"] = "**********"  # noqa: S105 - the redaction marker
        return out


def require_service(settings: Settings, transport: object | None = None) -> None:
    """Raise :class:`fundpipe.errors.ConfigurationError` unless ``settings`` name a service.

    Library entry points (``ingest``, ``sync``) never start the embedded sandbox: only
    ``fundpipe.app`` does (``fundpipe.app.embedded.service``). A test's ``transport`` stands in
    for the service.
    """
    from fundpipe.errors import ConfigurationError

    if settings.service.embedded and transport is None:
        raise ConfigurationError(
            "no service configured: set FUNDPIPE_BASE_URL (the CLI and the flows start the "
            "embedded sandbox when it is unset)"
        )

"""The service fundpipe talks to and who it is there: URL, credentials, organizations, scopes,
the guessed operations' paths, the ledger's binding, and the embedded sandbox's two switches."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field, SecretStr, field_validator
from pydantic_settings import NoDecode

from fundpipe.clientpolicy import DEFAULT_PATHS

__all__ = [
    "DEFAULT_PATHS",
    "DEMO_CLIENT_ID",
    "DEMO_CLIENT_SECRET",
    "DEMO_ORG_ID",
    "EmbeddedSandboxSettings",
    "ServiceSettings",
]

#: Credentials of the embedded sandbox's demo organization (not secrets: the sandbox seeds them).
DEMO_CLIENT_ID = "demo-client"
DEMO_CLIENT_SECRET = "demo-secret"  # noqa: S105 - public demo credential of the local sandbox
DEMO_ORG_ID = "org_demo"


class ServiceSettings(BaseModel):
    """The service, the credentials, the organizations to act for, and what to read."""

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
    org_name: str | None = Field(
        default=None,
        description="The organization's name in reports (set per organization from its "
        "FUNDPIPE_ORGS `name` or the service's organization read; unset: its id).",
    )
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

    @field_validator("scopes", mode="before")
    @classmethod
    def _normalise_scopes(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            value = " ".join(str(s) for s in value)
        if isinstance(value, str):
            return " ".join(value.replace(",", " ").split()) or None
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
    def embedded(self) -> bool:
        """True when no service is configured and the embedded sandbox is used."""
        return not self.base_url

    @property
    def effective_token_url(self) -> str | None:
        """Where tokens are fetched: `token_url`, else the base URL."""
        return self.token_url or self.base_url

    @property
    def service_identity(self) -> str:
        """The service the ledger binds to: `service_name`, else the base URL."""
        return self.service_name or (self.base_url or "").rstrip("/")


class EmbeddedSandboxSettings(BaseModel):
    """How the embedded sandbox (no FUNDPIPE_BASE_URL) answers; ignored against a real service."""

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

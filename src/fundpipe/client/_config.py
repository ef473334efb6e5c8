"""`ClientConfig`: everything `FundClient` needs, and nothing of the application's settings.

The application builds it from its own settings (`fundpipe.config.Settings.client_config()`);
a library user builds it directly. It is frozen and typed: the client never reads the
environment, a data directory or a report setting.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType

from pydantic import SecretStr

#: Paths of the operations the interface does not show (DESIGN, "ours"), by name. The same
#: defaults as `fundpipe.config.DEFAULT_PATHS` (tests/client checks): the client does not import
#: the application's settings.
DEFAULT_PATHS: Mapping[str, str] = MappingProxyType(
    {
        "vehicles": "/v1/vehicles",
        "vehicle": "/v1/vehicles/{veh_id}",
        "organizations": "/v1/organizations",
        "organization": "/v1/organizations/{org_id}",
        "financial_accounts": "/v1/financial_accounts",
        "entity_contacts": "/v1/entities/{ent_id}/contacts",
    }
)


def _default_paths() -> Mapping[str, str]:
    return MappingProxyType(dict(DEFAULT_PATHS))


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """The client's service, credentials and HTTP policy.

    Service and identity:

    - `base_url`: the service (None: nothing configured, the client refuses to start);
    - `token_url`: where tokens are fetched (None: the base URL);
    - `client_id`, `client_secret`: OAuth client credentials; `client_secret_block` only names
      the Prefect Secret block the secret should come from, for the error that says it was not
      loaded;
    - `scopes`: space-separated scopes to ask for (None: the client's default grant);
    - `org_id`: `X-Organization-Id` of every request (None: the token's own organization);
    - `paths`: paths of the operations the interface does not show (`DEFAULT_PATHS` names).

    HTTP policy:

    - `connect_timeout_s`, `read_timeout_s`: per attempt;
    - `token_leeway_s`: a token is renewed this long before it expires;
    - `retry_deadline_s`: how long one request keeps being retried through failures the policy
      retries (an outage is ridden out until then; see `fundpipe.client._retry`);
    - `backoff_initial_s`, `backoff_max_s`: the backoff's first ceiling and its cap (full
      jitter below the ceiling);
    - `retry_after_cap_s`: the longest `Retry-After` honoured as given;
    - `max_attempts`: an optional bound on attempts besides the deadline (None: the deadline
      alone decides);
    - `rate_limit_per_s`, `max_concurrency`: the client-side rate limit and requests in flight;
    - `ca_bundle`: a PEM bundle replacing the default trust store.
    """

    base_url: str | None = None
    token_url: str | None = None
    client_id: str | None = None
    client_secret: SecretStr | None = None
    client_secret_block: str | None = None
    scopes: str | None = None
    org_id: str | None = None
    paths: Mapping[str, str] = field(default_factory=_default_paths)
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 30.0
    token_leeway_s: float = 60.0
    retry_deadline_s: float = 120.0
    backoff_initial_s: float = 0.2
    backoff_max_s: float = 30.0
    retry_after_cap_s: float = 60.0
    max_attempts: int | None = None
    rate_limit_per_s: float = 9.0
    max_concurrency: int = 8
    ca_bundle: Path | None = None

    def __post_init__(self) -> None:
        """Refuse a policy no client can follow; keep `paths` read-only."""
        for name in (
            "connect_timeout_s",
            "read_timeout_s",
            "retry_deadline_s",
            "backoff_initial_s",
            "backoff_max_s",
            "retry_after_cap_s",
            "rate_limit_per_s",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be greater than 0, not {getattr(self, name)}")
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, not {self.max_attempts}")
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, not {self.max_concurrency}")
        if not isinstance(self.paths, MappingProxyType):
            object.__setattr__(self, "paths", MappingProxyType({**DEFAULT_PATHS, **self.paths}))

    @property
    def effective_token_url(self) -> str | None:
        """Where tokens are fetched: `token_url`, else the base URL."""
        return self.token_url or self.base_url

    def with_secret(self, secret: str) -> ClientConfig:
        """A copy holding `secret` as the client secret."""
        return replace(self, client_secret=SecretStr(secret))

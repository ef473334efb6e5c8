"""`ClientConfig`: everything `FundClient` needs, and nothing of the application's settings.

The application builds it from its own settings (`fundpipe.config.Settings.client_config()`,
which hands over its `http` group as it is); a library user builds it directly,
`ClientConfig(base_url=..., http=HttpPolicy(retry_deadline_s=30))`. It is frozen and typed: the
client never reads the environment, a data directory or a report setting. `HttpPolicy` and
`DEFAULT_PATHS` are defined once, in `fundpipe.clientpolicy`, below the client and the settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from pydantic import SecretStr

from fundpipe.clientpolicy import DEFAULT_PATHS, HttpPolicy

__all__ = ["DEFAULT_PATHS", "ClientConfig", "HttpPolicy"]


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

    HTTP policy: `http`, an `HttpPolicy` (timeouts, token leeway, retry deadline, backoff,
    Retry-After cap, optional attempt bound, rate, concurrency, CA bundle), validated by
    pydantic when it is built.
    """

    base_url: str | None = None
    token_url: str | None = None
    client_id: str | None = None
    client_secret: SecretStr | None = None
    client_secret_block: str | None = None
    scopes: str | None = None
    org_id: str | None = None
    paths: Mapping[str, str] = field(default_factory=_default_paths)
    http: HttpPolicy = field(default_factory=HttpPolicy)

    def __post_init__(self) -> None:
        """Refuse a policy no client can follow; complete `paths` from `DEFAULT_PATHS` and keep
        them read-only."""
        # validated again: a policy made by `model_copy(update=...)` (`Settings.updated`) was not
        object.__setattr__(self, "http", HttpPolicy.model_validate(self.http.model_dump()))
        if not isinstance(self.paths, MappingProxyType):
            object.__setattr__(self, "paths", MappingProxyType({**DEFAULT_PATHS, **self.paths}))

    @property
    def effective_token_url(self) -> str | None:
        """Where tokens are fetched: `token_url`, else the base URL."""
        return self.token_url or self.base_url

    def with_secret(self, secret: str) -> ClientConfig:
        """A copy holding `secret` as the client secret."""
        return replace(self, client_secret=SecretStr(secret))

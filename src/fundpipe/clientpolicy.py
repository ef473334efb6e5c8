"""What the service client is told besides who it is: its HTTP policy and the guessed paths.

One definition each, below both of their readers: `fundpipe.client` takes them in its
`ClientConfig` (the client is usable without the application's settings), and
`fundpipe.config` embeds `HttpPolicy` as the `http` settings group (`FUNDPIPE_RETRY_DEADLINE_S`,
…) and completes `FUNDPIPE_PATHS` from `DEFAULT_PATHS`. Imports neither of them, nor httpx.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_PATHS", "HttpPolicy"]

#: Paths of the operations the interface does not show (DESIGN, "ours"), by name: guesses the
#: sandbox serves, overridable one by one with FUNDPIPE_PATHS (JSON object, e.g.
#: '{"vehicles": "/v2/funds"}').
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


class HttpPolicy(BaseModel):
    """How the client talks HTTP: timeouts, the retry policy, rate, concurrency, CA bundle.

    - `connect_timeout_s`, `read_timeout_s`: per attempt;
    - `token_leeway_s`: a token is renewed this long before it expires;
    - `max_attempts`: an optional bound on attempts besides the deadline (None: the deadline
      alone decides);
    - `retry_deadline_s`: how long one request keeps being retried through failures the policy
      retries (an outage is ridden out until then; see `fundpipe.client._retry`);
    - `retry_after_cap_s`: the longest `Retry-After` honoured as given;
    - `backoff_initial_s`, `backoff_max_s`: the backoff's first ceiling and its cap (full
      jitter below the ceiling);
    - `rate_limit_per_s`, `max_concurrency`: the client-side rate limit and requests in flight;
    - `ca_bundle`: a PEM bundle replacing the default trust store.

    Frozen, like the `ClientConfig` that holds it: a copy with other values is
    `policy.model_copy(update=...)`.
    """

    model_config = ConfigDict(frozen=True)

    connect_timeout_s: float = Field(default=10.0, gt=0)
    read_timeout_s: float = Field(default=30.0, gt=0)
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

"""The service client's HTTP policy as settings (`FUNDPIPE_CONNECT_TIMEOUT_S`, …): timeouts,
retries, rate and concurrency, trust store. The client never reads them from here: it takes its
own `fundpipe.client.ClientConfig`, which `Settings.client_config()` builds from them."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

__all__ = ["HttpPolicySettings"]


class HttpPolicySettings(BaseModel):
    """How the client talks HTTP: timeouts, the retry policy, rate, concurrency, CA bundle."""

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

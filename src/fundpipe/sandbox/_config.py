"""Configuration of one sandbox instance (`SandboxConfig`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

SeedName = Literal["demo", "empty"]
#: What the rate limiter counts a quota for: each client, or each client and organization.
RateLimitScope = Literal["client", "client_org"]
RATE_LIMIT_SCOPES: tuple[RateLimitScope, ...] = ("client", "client_org")

#: Host of the web application that `sender_url` / `recipient_url` point at (interface 1.6.0).
DEFAULT_APP_URL = "https://app.sandbox.fundservice.example"
#: Most demo organizations a seed creates (`org_demo`, then `org_demob` … `org_demoz`).
MAX_DEMO_ORGS = 26


@dataclass(slots=True)
class SandboxConfig:
    """Everything a sandbox instance needs; see docs/architecture.md ("Sandbox").

    - `db_path`: SQLite file for durable state; None → private in-memory state.
    - `seed`: what a *new* database is filled with (`demo` or `empty`); an existing file keeps
      its state.
    - `token_lifetime_s`, `rate_limit_requests`, `rate_limit_window_s`: initial settings (the
      control route `PUT /_sandbox/settings` changes them at run time).
    - `control_routes`: serve `/_sandbox/*` (404 when False).
    - `app_url`: host of `sender_url` / `recipient_url`.
    - `clock`: injectable source of "now" (aware UTC); the control routes advance on top of it.
    - `max_body_bytes`: request bodies above this get 413.
    - `strict_interface`: serve only the documented surface (see `fundpipe.sandbox._modes`).
    - `public_forms`: the public spec's record and body forms (see `fundpipe.sandbox._modes`).
    - `reject_unknown_fields`: refuse create bodies with properties the public description
      does not allow (payment instructions too), in the public error form (see
      `fundpipe.sandbox._modes`).
    - `legacy_pagination`: lists in the older `has_more`-only form (initial setting; the
      control route `PUT /_sandbox/settings` changes it at run time).
    - `demo_orgs`: how many demo organizations the `demo` seed creates (1 to 26; the second
      and later ones are `org_demob`, `org_democ`, …, all reachable by the demo clients).
    - `rate_limit_scope`: a sandbox mode, not part of the documented interface (which shows
      no quotas): `client` (default) limits each client's requests together; `client_org`
      gives each client a quota per organization (`X-Organization-Id`), as a service that
      limits every organization on its own would (initial setting; `PUT /_sandbox/settings`
      changes it at run time).
    """

    db_path: Path | None = None
    seed: SeedName = "demo"
    token_lifetime_s: int = 3600
    rate_limit_requests: int = 100
    rate_limit_window_s: float = 10.0
    control_routes: bool = True
    app_url: str = DEFAULT_APP_URL
    clock: Callable[[], datetime] | None = None
    max_body_bytes: int = 10 * 1024 * 1024
    strict_interface: bool = False
    public_forms: bool = False
    reject_unknown_fields: bool = False
    legacy_pagination: bool = False
    demo_orgs: int = 1
    rate_limit_scope: RateLimitScope = "client"

    def __post_init__(self) -> None:
        """Refuse settings no sandbox can serve."""
        if not 1 <= self.demo_orgs <= MAX_DEMO_ORGS:
            raise ValueError(f"demo_orgs must be from 1 to {MAX_DEMO_ORGS}, not {self.demo_orgs}")
        if self.rate_limit_scope not in RATE_LIMIT_SCOPES:
            raise ValueError(
                f"rate_limit_scope must be one of {RATE_LIMIT_SCOPES}, not {self.rate_limit_scope!r}"
            )

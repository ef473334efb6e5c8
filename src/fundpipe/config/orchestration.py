"""The orchestration settings, owned by the Prefect shell (`fundpipe.app.prefect`): schedules
`fundpipe serve` serves and `flows/prefect.yaml` declares, the nightly fan-out across
organizations, the local Prefect server's port.

They live here, below `app/`, only so that the one `Settings` composes them (nothing below
`app/` imports `app/`); nothing below `app/` reads them.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = ["OrchestrationSettings"]


class OrchestrationSettings(BaseModel):
    """Schedules, fan-out and the Prefect server: read by `fundpipe.app.prefect` only."""

    # --- several organizations (fundpipe.app.prefect.fanout) ---------------------------------
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

    prefect_port: int = Field(
        default=4200,
        ge=1,
        le=65535,
        description="Port of the Prefect server `fundpipe serve` starts on 127.0.0.1 when "
        "PREFECT_API_URL is not set.",
    )

    # --- schedules (fundpipe serve, flows/prefect.yaml) --------------------------------------
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

    @property
    def night_check_cron(self) -> str:
        """The night-check deployment's cron: every day at `complete_by`."""
        hour, minute = (int(part) for part in self.complete_by.split(":"))
        return f"{minute} {hour} * * *"

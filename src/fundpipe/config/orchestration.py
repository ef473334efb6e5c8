"""The orchestration settings, owned by the Prefect shell (`fundpipe.app.prefect`): schedules
`fundpipe serve` serves and `flows/prefect.yaml` declares, the nightly fan-out across
organizations, the local Prefect server's port.

They live here, below `app/`, only so that the one `Settings` composes them (nothing below
`app/` imports `app/`); nothing below `app/` reads them.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field

from fundpipe.config.local import iana_zone

__all__ = ["OrchestrationSettings", "hh_mm"]

_HH_MM = re.compile(r"([01][0-9]|2[0-3]):[0-5][0-9]")

#: A cron's five fields: each one's name and range (a month or a weekday may also be named).
_CRON_FIELDS = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 7),
)
_NAMES = {
    "month": ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
    "day of week": ["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
}
#: The nicknames Prefect's cron schedules also take.
_NICKNAMES = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_CRON_PART = re.compile(r"(\*|(?P<a>\w+)(-(?P<b>\w+))?)(/(?P<step>[0-9]+))?")


def hh_mm(value: str) -> str:
    """`value` if it is HH:MM on the 24-hour clock; else ValueError saying so."""
    if not _HH_MM.fullmatch(value):
        raise ValueError("expected HH:MM on the 24-hour clock, e.g. 06:00")
    return value


def _check_cron(value: str) -> str:
    """`value` if it is a cron Prefect schedules by: five fields (minute hour day-of-month month
    day-of-week), each `*`, a number or range within the field's bounds (or a month's or
    weekday's name), a list of them, with an optional `/step` — or a nickname like ``@daily``;
    else ValueError saying what is expected."""
    expected = (
        "expected a cron of five fields (minute hour day-of-month month day-of-week), "
        "e.g. 30 1 * * *"
    )
    fields = value.split()
    if value.strip().lower() in _NICKNAMES:
        return value
    if len(fields) != len(_CRON_FIELDS):
        raise ValueError(expected)
    for text, (name, low, high) in zip(fields, _CRON_FIELDS, strict=True):
        names = _NAMES.get(name, [])
        for part in text.split(","):
            if any(special in part.upper() for special in "LW#?"):
                continue  # last day, weekday, nth weekday: left to Prefect's own reading
            match = _CRON_PART.fullmatch(part.lower())
            bounds = [] if match is None else [match["a"], match["b"]]
            if (
                match is None
                or match["step"] == "0"
                or not all(
                    b is None or b in names or (b.isdigit() and low <= int(b) <= high)
                    for b in bounds
                )
            ):
                raise ValueError(f"{expected}; its {name} {text!r} is not within {low}-{high}")
    return value


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
    nightly_cron: Annotated[str, AfterValidator(_check_cron)] = Field(
        default="30 1 * * *", description="When the nightly deployment runs (cron)."
    )
    nightly_timezone: Annotated[str, AfterValidator(iana_zone)] = Field(
        default="America/New_York",
        description="IANA zone the nightly cron and the inbox interval are read in.",
    )
    inbox_interval_s: int = Field(
        default=300, ge=1, description="Seconds between two runs of the inbox deployment."
    )
    complete_by: Annotated[str, AfterValidator(hh_mm)] = Field(
        default="06:00",
        description="HH:MM in the nightly's timezone by which every organization's night must "
        "have completed: when the night-check deployment runs, and the default of `fundpipe "
        "alerts install --complete-by`.",
    )

    @property
    def night_check_cron(self) -> str:
        """The night-check deployment's cron: every day at `complete_by`."""
        hour, minute = (int(part) for part in self.complete_by.split(":"))
        return f"{minute} {hour} * * *"

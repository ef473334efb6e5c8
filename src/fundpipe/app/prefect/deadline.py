"""The late-night alert: fundpipe checks, at the deadline, which organizations have no completed
night, and says so with one `fundpipe.night.missed` event each.

Why a check of our own and not a Prefect proactive trigger: a proactive trigger ("expect
`fundpipe.night.completed` within W") evaluates back-to-back windows of W counted from the
automation's creation, not from the clock. Installed at 12:32 with a 35 h window, its first
alert could come only ~35 h later, later ones at window ends; a window longer than a day can
hold a completed night and a missed one; and one organization's completed night satisfies it
for all. Prefect's triggers cannot say "by 07:00 every day, per organization".

So the `night-check` deployment is scheduled at the deadline (a cron at `--complete-by`, in the
nightly's timezone). Its run takes its own scheduled time as the deadline, reads the
`fundpipe.night.completed` events of the day before it from the Prefect server, and emits
`fundpipe.night.missed` (resource `fundpipe.night.<org>`) for every configured organization
without one. The automation "fundpipe: no night completed" (`fundpipe alerts install`) turns
each into a notification naming the organization: one per organization per missed night, none
on a night it completed, within a minute or so of the deadline (the scheduler, a worker's poll).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from prefect import State, flow, get_run_logger
from prefect.states import Completed

from fundpipe.app.prefect.oncall import NIGHT_COMPLETED

if TYPE_CHECKING:
    from fundpipe.config import Settings

__all__ = ["CHECK_FLOW", "MISSED", "deadline_of", "missed", "missed_event", "night_check"]

#: The event of an organization without a completed night at the deadline.
MISSED = "fundpipe.night.missed"
#: The check's flow (and deployment) name.
CHECK_FLOW = "night-check"


def deadline_of(scheduled: datetime, zone: str) -> datetime:
    """The deadline a check scheduled at ``scheduled`` stands for: that minute, in ``zone``."""
    return scheduled.astimezone(ZoneInfo(zone)).replace(second=0, microsecond=0)


def missed(organizations: Iterable[str], completed: Iterable[str]) -> list[str]:
    """The organizations (in order) with no completed night."""
    done = set(completed)
    return [org for org in organizations if org not in done]


def missed_event(org: str, deadline: datetime) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The `fundpipe.night.missed` event of one organization at ``deadline``."""
    return (
        MISSED,
        {
            "prefect.resource.id": f"fundpipe.night.{org}",
            "prefect.resource.name": f"fundpipe night of {org}",
        },
        {
            "organization": org,
            "complete_by": deadline.strftime("%H:%M"),
            "timezone": str(deadline.tzinfo),
            "deadline": deadline.isoformat(),
            "since": (deadline - timedelta(days=1)).isoformat(),
        },
    )


async def _completed_between(since: datetime, until: datetime) -> set[str]:
    """The organizations with a `fundpipe.night.completed` event in [since, until]."""
    from prefect.client.orchestration import get_client

    found: set[str] = set()
    async with get_client() as client:
        answer = await client._client.post(  # the events API has no client method
            "/events/filter",
            json={
                "filter": {
                    "event": {"name": [NIGHT_COMPLETED]},
                    "occurred": {"since": since.isoformat(), "until": until.isoformat()},
                },
                "limit": 50,  # the most the server returns a page; next_page has the rest
            },
        )
        answer.raise_for_status()
        page: dict[str, Any] = answer.json()
        while True:
            for event in page.get("events", []):
                org = (event.get("payload") or {}).get("organization")
                if org:
                    found.add(str(org))
            next_page = page.get("next_page")
            if not next_page:
                return found
            more = await client._client.get(next_page)
            more.raise_for_status()
            page = more.json()


def _organizations() -> list[str]:
    """Every organization a night runs for, by id, without asking the service: the configured
    ones (FUNDPIPE_ORGS / FUNDPIPE_ORGS_FILE), else those with a folder under `data/orgs/` (the
    embedded sandbox's nightly runs both demo organizations, so both are checked), else
    FUNDPIPE_ORG_ID, else the demo one. Nothing is moved: the check only reads."""
    from fundpipe.app.prefect.steps import _settings

    return organizations_to_check(_settings(None))


def organizations_to_check(settings: Settings) -> list[str]:
    """The organization folders the night check looks for (see `_organizations`)."""
    from fundpipe.app.prefect.tell import organization
    from fundpipe.orgs import Among, configured_organizations, find_organizations

    configured = configured_organizations(settings)
    if configured:
        return [o.folder for o in configured]
    _, found = find_organizations(settings, Among.LOCAL, load_secret=None)
    if found:
        return [o.folder for o in found]
    return [organization(settings)]


def _check_name() -> str:
    """`night-check-<date>`: the date of the deadline it checks."""
    from prefect.runtime import flow_run

    scheduled = flow_run.scheduled_start_time or datetime.now(ZoneInfo("UTC"))
    return f"night-check-{scheduled:%Y-%m-%d}"


@flow(name=CHECK_FLOW, flow_run_name=_check_name)
def night_check(organizations: list[str] | None = None) -> State[Any]:
    """At the deadline (this run's scheduled time): one `fundpipe.night.missed` event for each
    organization (`organizations`, default every configured one) with no
    `fundpipe.night.completed` in the day before it."""
    import asyncio

    from prefect.events import emit_event
    from prefect.runtime import flow_run

    from fundpipe.app.prefect.steps import _settings

    zone = _settings(None).nightly_timezone
    scheduled = flow_run.scheduled_start_time or datetime.now(ZoneInfo(zone))
    deadline = deadline_of(scheduled, zone)
    orgs = organizations or _organizations()
    completed = asyncio.run(_completed_between(deadline - timedelta(days=1), deadline))
    late = missed(orgs, completed)
    logger = get_run_logger()
    for org in late:
        name, resource, payload = missed_event(org, deadline)
        emit_event(event=name, resource=resource, payload=payload)
        logger.warning("no night completed for %s by %s", org, deadline.strftime("%H:%M %Z"))
    done = [o for o in orgs if o not in late]
    message = (
        f"night check at {deadline:%Y-%m-%d %H:%M} {zone}: "
        + (f"no night completed for {', '.join(late)}" if late else "every night completed")
        + (f"; completed: {', '.join(done)}" if late and done else "")
    )
    return Completed(message=message, data={"missed": late, "completed": done})

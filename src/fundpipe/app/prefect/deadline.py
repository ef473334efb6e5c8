"""The late-night alert: "no night completed for <organization> by 06:00", heard even when the
machine that runs the nights is down.

**The server's own watch.** The alert is a Prefect *proactive* automation per organization
(`fundpipe alerts install`, :func:`missed_night_automation`),
evaluated by the Prefect server alone — no worker, no `fundpipe serve`, no run of ours:

- *the window opens* when the `nightly` deployment's scheduled run is due: a worker or `fundpipe
  serve` moves it to Pending, or — nothing there to take it — the server's late-runs service marks
  it Late ~15 s after its time. Either is an event the server emits itself
  (`prefect.flow-run.Pending` / `prefect.flow-run.Late`, related to the deployment `nightly`);
- *it expects*, within :func:`night_window` (the deadline minus the nightly's hour: 01:30 → 06:00
  is 4 h 30 min), the organization's `fundpipe.night.completed` — or its `fundpipe.night.failed`,
  whose own alert already told that night;
- *it fires* at the window's end when neither came, naming the organization by name, the
  deadline and the nightly run (its UI link, its state: Late says nothing took it).

**A late night is one incident.** A `nightly` run left Late past the deadline fires the alert;
when a worker then takes it, its Pending event would open a second window (and, should that run
hang, a second "missed" alert). The run itself, started after its deadline (:func:`deadline_after`
its scheduled time), emits `fundpipe.night.started-late` for each organization first, which that
window counts as the night told: it closes. When the night ends past the deadline, each
organization that did not fail gets `fundpipe.night.completed-late`, whose one alert ("the night
of <name> completed late") closes the incident; a failed one has its "night failed" alert.

Why anchored on the nightly's run and not a bare proactive window: a trigger without an `after`
event counts back-to-back windows from the automation's creation, not from the clock, and one
organization's night would satisfy it for all. Its `for_each` names a label no event carries: every
event falls in one bucket, and — unlike a trigger without `for_each`, which Prefect opens by itself
every window — the bucket opens only on the nightly's run. A nightly started by hand opens a window
too (it says when a night is expected, then). The window is a fixed length: across a DST change the
alert comes an hour early or late that one night.

**The check on the worker.** The `night-check` deployment, scheduled at the deadline, still records
in its run which organizations had no completed night (`fundpipe.night.missed`, one event each);
it sends no alert of its own (the automation above does, once).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from prefect import State, flow, get_run_logger
from prefect.states import Completed

from fundpipe.app.prefect.oncall import (
    NIGHT_COMPLETED,
    NIGHT_FAILED,
    NIGHT_STARTED_LATE,
    NIGHT_WINDOW,
    NIGHTLY,
    PREFIX,
    RUN_LINK,
)

if TYPE_CHECKING:
    from fundpipe.config import Settings

__all__ = [
    "CHECK_FLOW",
    "MISSED",
    "deadline_after",
    "deadline_of",
    "missed",
    "missed_event",
    "missed_night_automation",
    "night_check",
    "night_window",
    "organizations_named",
]

#: The event of an organization without a completed night at the deadline.
MISSED = "fundpipe.night.missed"
#: The check's flow (and deployment) name.
CHECK_FLOW = "night-check"


#: The name of the missed-night automation of one organization: this, then its name.
MISSED_PREFIX = f"{PREFIX}no night completed for "
#: The events of a nightly's scheduled run that say it was due: taken (Pending), or left (Late).
NIGHT_DUE = {"prefect.flow-run.Pending", "prefect.flow-run.Late"}
#: How late the server may see a scheduler-made run's first state event (its causal ordering
#: waits that long for the Scheduled event the scheduler never emits).
ORDERING_DELAY = timedelta(minutes=16)
#: A label no event carries: the missed-night trigger's one bucket (see `deadline`).
_ONE_BUCKET = "fundpipe.night-window"


def _missed_body(org: str, name: str, complete_by: str, zone: str) -> str:
    """What the missed-night alert of one organization says (the nightly run is the one whose
    being due opened the window)."""
    who = name if name == org else f"{name} ({org})"
    return (
        f"No fundpipe night completed for {who} by {complete_by} ({zone}).\n"
        "{% if flow_run %}Tonight's nightly run {{ flow_run.name }} is {{ flow_run.state.name }}"
        "{% if flow_run.state.name == 'Late' %}: nothing took it — no worker of its work pool "
        "and no `fundpipe serve` is running (the machine that runs the nights may be down)"
        "{% elif flow_run.state.message %}: {{ flow_run.state.message }}{% endif %}.\n"
        "{% endif %}Next step: start the worker (or `fundpipe serve`) on the machine that runs the nights, "
        "then run the nightly again for this organization." + RUN_LINK
    )


def missed_night_automation(
    block_id: Any, org: str, name: str, complete_by: str, window: timedelta, zone: str
) -> Any:
    """The proactive automation that says "no night completed for <name> by <complete_by>"
    (see `fundpipe.app.prefect.deadline`): opened by the nightly deployment's run being due,
    satisfied by the organization's completed (or failed, already told) night within
    ``window``."""
    from prefect.events.actions import SendNotification
    from prefect.events.schemas.automations import AutomationCore, EventTrigger, Posture

    safe = name.replace("{", "(").replace("}", ")")
    trigger = EventTrigger(
        after=NIGHT_DUE,
        expect={NIGHT_COMPLETED, NIGHT_FAILED, NIGHT_STARTED_LATE},
        match={"prefect.resource.id": ["prefect.flow-run.*", f"fundpipe.night.{org}"]},
        # the nightly deployment's run, or a night's event (oncall.NIGHT_WINDOW)
        match_related={
            "prefect.resource.role": ["deployment", NIGHT_WINDOW["prefect.resource.role"]],
            "prefect.resource.name": NIGHTLY,
        },
        for_each={_ONE_BUCKET},
        posture=Posture.Proactive,
        threshold=1,
        within=window,
    )
    return AutomationCore(
        name=f"{MISSED_PREFIX}{safe}",
        description=f"No night completed for {safe} by {complete_by} ({zone}): checked by the "
        f"Prefect server itself, {window} after the nightly deployment's run was due.",
        trigger=trigger,
        actions=[
            SendNotification(
                block_document_id=block_id,
                subject=f"fundpipe: no night completed for {safe} by {complete_by}",
                body=_missed_body(org, safe, complete_by, zone),
            )
        ],
    )


def deadline_after(scheduled: datetime, complete_by: str, zone: str) -> datetime:
    """The deadline of a night scheduled at ``scheduled``: the first ``complete_by`` (HH:MM in
    ``zone``) after it (a nightly at 01:30 → 06:00 that day; at 22:50 → 06:00 the next)."""
    from datetime import date, time

    where = ZoneInfo(zone)
    local = scheduled.astimezone(where)
    hour, minute = (int(part) for part in complete_by.split(":"))
    day: date = local.date()
    at = datetime.combine(day, time(hour, minute), tzinfo=where)
    if at <= local:
        at = datetime.combine(day + timedelta(days=1), time(hour, minute), tzinfo=where)
    return at


def deadline_of(scheduled: datetime, zone: str) -> datetime:
    """The deadline a check scheduled at ``scheduled`` stands for: that minute, in ``zone``."""
    return scheduled.astimezone(ZoneInfo(zone)).replace(second=0, microsecond=0)


def night_window(nightly_cron: str, complete_by: str) -> timedelta:
    """How long after the nightly's scheduled run a night may take: from the cron's hour to
    ``complete_by`` (HH:MM, the same zone), across midnight when it must. A cron that is not
    once a day at a fixed minute (``30 1 * * *``) is an :class:`InputError`."""
    from fundpipe.errors import InputError

    fields = nightly_cron.split()
    if len(fields) != 5 or not all(f.isdigit() for f in fields[:2]) or fields[2:] != ["*"] * 3:
        raise InputError(
            f"the nightly's cron {nightly_cron!r} is not once a day at a fixed time (like "
            "'30 1 * * *'): the missed-night alert counts its window from that time"
        )
    start = int(fields[1]) * 60 + int(fields[0])
    hour, minute = (int(part) for part in complete_by.split(":"))
    minutes = (hour * 60 + minute - start) % (24 * 60)
    return timedelta(minutes=minutes or 24 * 60)


def organizations_named(settings: Settings) -> list[tuple[str, str]]:
    """Every organization the night check looks for (:func:`organizations_to_check`), each with
    the name people know it by (its configured name, else its id)."""
    from fundpipe.orgs import configured_organizations

    names = {o.folder: o.name for o in configured_organizations(settings) or []}
    return [(org, names.get(org) or org) for org in organizations_to_check(settings)]


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


def organizations_to_check(settings: Settings) -> list[str]:
    """Every organization a night runs for, by folder, without asking the service: the
    configured ones (FUNDPIPE_ORGS / FUNDPIPE_ORGS_FILE), else those with a folder under
    `data/orgs/` (the embedded sandbox's nightly runs both demo organizations, so both are
    checked), else FUNDPIPE_ORG_ID, else the demo one. Nothing is moved: the check only reads."""
    from fundpipe.app.prefect.tell import organization
    from fundpipe.orgs import Among, configured_organizations, find_organizations

    configured = configured_organizations(settings)
    if configured:
        return [o.folder for o in configured]
    _, found = find_organizations(settings, Among.LOCAL, load_secret=None)
    if found:
        return [o.folder for o in found]
    return [organization(settings)]


@flow(name=CHECK_FLOW)
def night_check(organizations: list[str] | None = None) -> State[Any]:
    """At the deadline (this run's scheduled time): one `fundpipe.night.missed` event for each
    organization (`organizations`, default every configured one) with no
    `fundpipe.night.completed` in the day before it."""
    import asyncio

    from prefect.events import emit_event
    from prefect.runtime import flow_run

    from fundpipe.app.prefect.steps import _settings

    settings = _settings(None)
    zone = settings.orchestration.nightly_timezone
    scheduled = flow_run.scheduled_start_time or datetime.now(ZoneInfo(zone))
    deadline = deadline_of(scheduled, zone)
    orgs = organizations or organizations_to_check(settings)
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

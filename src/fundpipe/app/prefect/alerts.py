"""Alerts through Prefect's own automations: `fundpipe alerts install` / `fundpipe alerts list`.

On the server named by `PREFECT_API_URL`, one webhook notification block
(:data:`BLOCK_NAME`, a `CustomWebhookNotificationBlock` that POSTs ``{"subject", "text"}`` as
JSON; the URL is kept among the block's secret values) and the automations below, each sending
one notification through that block. One incident is one alert: every subject names the
organization by its name, every text links to the run in the Prefect UI (`{{ flow_run|ui_url }}`,
the server's UI URL) and says what to do next.

| automation | fires when | says |
|---|---|---|
| ``fundpipe: a run crashed`` | a fundpipe run ends Crashed (its process died) | flow, organization, reason, next step, link |
| ``fundpipe: a run failed`` | a fundpipe run ends Failed — but the flows of :data:`NIGHTS_TOLD_BY_EVENT`, whose failed nights the next line tells, once per organization | flow, organization, reason, next step, link |
| ``fundpipe: a night failed`` | ``fundpipe.night.failed``: one organization's night failed | the organization, why, the service host, what to do, link |
| ``fundpipe: no night completed for <name>`` | one per organization, *proactive*, evaluated by the server alone: the nightly's scheduled run was due (Pending, or Late with nothing to take it) and no night completed (nor failed) for it by the deadline (`fundpipe.app.prefect.deadline`) | the organization, the deadline, the nightly run's state, link |
| ``fundpipe: a night completed late`` | ``fundpipe.night.completed-late``: a night that missed its deadline completed after it (the one message that closes the missed-night incident) | the organization, the deadline, the verdict, link |
| ``fundpipe: a file was rejected`` | ``fundpipe.file.rejected`` (the exception it opens is this alert's, not one more) | file, organization, reason, error report, link |
| ``fundpipe: an exception opened`` | ``fundpipe.exception.opened``, of an exception no file's alert told | exception, organization, what, amount, what to do, link |

Installing is idempotent: automations are matched by name; one that already says the same is
left alone, one that differs is updated, duplicates and fundpipe automations no longer wanted
(an organization gone, an alert renamed) are deleted.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from fundpipe.app.prefect.deadline import ORDERING_DELAY, missed_night_automation
from fundpipe.app.prefect.oncall import (
    EXCEPTION_OPENED,
    FILE_REJECTED,
    NIGHT_COMPLETED_LATE,
    NIGHT_FAILED,
    NIGHTLY,
    PREFIX,
    RUN_LINK,
)

#: The notification block's name on the server.
BLOCK_NAME = "fundpipe-alerts"
#: The flows whose deployments' runs are watched for Failed / Crashed.
FLOWS = ["nightly", "org-night", "inbox", "ingest_file", "sync", "reconcile", "night-check"]
#: The flows whose Failed runs are told per organization by `fundpipe.night.failed` instead of
#: as a run (one alert per incident): the night shells emit it for every organization whose
#: night failed (`tell.tell_night_failed`: the nightly run for its children, an `org-night` run
#: on its own for itself, a nightly run that failed before any child for "every
#: organization"). A "Needs a person" run (FAILED type, of any flow) is no "run failed": its
#: event is `prefect.flow-run.Needs a person`, and the file and exception alerts tell it.
NIGHTS_TOLD_BY_EVENT: list[str] = ["nightly", "org-night"]


def _names(organizations: Sequence[tuple[str, str]]) -> str:
    """A Jinja statement setting ``names``: organization id → the name people know it by."""
    mapping = json.dumps(dict(organizations), sort_keys=True, ensure_ascii=False)
    return "{% set names = " + mapping.replace("{%", "{ %").replace("%}", "% }") + " %}"


def _name_of(expr: str) -> str:
    """The name of the organization whose id ``expr`` gives (its id when not configured)."""
    return "{{ names.get(" + expr + ", " + expr + ") }}"


#: The organization of an event: the name its night knew it by (``event.payload.name``), else
#: the name configured when the alerts were installed, else its id.
_EVENT_ORG = (
    "{% if event.payload.name %}{{ event.payload.name }}{% else %}"
    + _name_of("event.payload.organization")
    + "{% endif %}"
)
#: "flow/deployment", or the flow alone for a run outside a deployment (`fundpipe run`).
_WHICH = "{{ flow.name }}{% if deployment %}/{{ deployment.name }}{% endif %}"
_RUN_ORG = (
    "{% if flow_run.parameters.org %}"
    + _name_of("flow_run.parameters.org")
    + "{% else %}every organization{% endif %}"
)
_FAILED_BODY = (
    "{% if deployment %}Deployment{% else %}Flow{% endif %} "
    + _WHICH
    + " ("
    + _RUN_ORG
    + "): run {{ flow_run.name }} ended {{ flow_run.state.name }}: "
    "{{ flow_run.state.message }}\n"
    "Next step: read the run's Logs tab, fix what it names, and run it again." + RUN_LINK
)
_NIGHT_FAILED_BODY = (
    "The night of {{ event.payload.name }} failed: {{ event.payload.why }}"
    "{% if event.payload.host %} (service {{ event.payload.host }}){% endif %}.\n"
    "Next step: {{ event.payload.what_to_do }}" + RUN_LINK
)
_LATE_BODY = (
    "The night of {{ event.payload.name }} completed late, after its {{ event.payload.deadline }} "
    "deadline{% if event.payload.verdict %}: {{ event.payload.verdict }}{% endif %}.\n"
    "This closes its missed-night alert; anything it left for a person has its own alert."
    + RUN_LINK
)
_REJECTED_BODY = (
    "{{ event.payload.file }} was rejected ("
    + _EVENT_ORG
    + ", {{ event.payload.rows }} row{{ '' if event.payload.rows|string == '1' else 's' }}): "
    "{{ event.payload.reason }}.\n"
    "{% if event.payload.error_report %}Error report: {{ event.payload.error_report }}.\n"
    "{% endif %}Next step: correct the file and drop it again; until a corrected file carries "
    "its distributions it stays an open exception." + RUN_LINK
)
_OPENED_BODY = (
    "Exception {{ event.payload.id }} opened ("
    + _EVENT_ORG
    + "): {{ event.payload.what }}{% if event.payload.amount %} — {{ event.payload.amount }}"
    "{% endif %}.{% if event.payload.what_to_do %}\nNext step: {{ event.payload.what_to_do }}"
    "{% endif %}{% if event.payload.report %}\nReport: {{ event.payload.report }}{% endif %}"
    + RUN_LINK
)


@dataclass(frozen=True)
class Installed:
    """One automation (or the block) and what installing did to it."""

    name: str
    outcome: str  # created, updated, unchanged, deleted
    detail: str = ""


def automations(
    block_id: Any,
    complete_by: str,
    organizations: Sequence[tuple[str, str]] = (),
    window: timedelta = timedelta(hours=4, minutes=30),
    zone: str = "America/New_York",
    told_by_event: Sequence[str] = tuple(NIGHTS_TOLD_BY_EVENT),
) -> list[Any]:
    """The automations (Prefect `AutomationCore`), each notifying through ``block_id``; one
    missed-night automation per organization of ``organizations`` ((id, name) pairs). The
    Failed runs of the flows ``told_by_event`` are not alerted as runs (see
    :data:`NIGHTS_TOLD_BY_EVENT`)."""
    from prefect.events.actions import SendNotification
    from prefect.events.schemas.automations import AutomationCore, EventTrigger, Posture

    names = _names(organizations)

    def notify(subject: str, body: str) -> list[Any]:
        return [
            SendNotification(block_document_id=block_id, subject=names + subject, body=names + body)
        ]

    def _on_each(
        name: str, description: str, event: str, match: dict[str, Any], actions: list[Any]
    ) -> Any:
        """An automation that fires on every `event` of a resource matching `match`."""
        trigger = EventTrigger(
            expect={event},
            match=match,
            posture=Posture.Reactive,
            threshold=1,
            within=timedelta(0),
        )
        return AutomationCore(name=name, description=description, trigger=trigger, actions=actions)

    def _run_ended(states: set[str], flows: list[str], description: str, name: str) -> Any:
        return AutomationCore(
            name=name,
            description=description,
            trigger=EventTrigger(
                expect=states,
                match={"prefect.resource.id": "prefect.flow-run.*"},
                match_related={"prefect.resource.role": "flow", "prefect.resource.name": flows},
                posture=Posture.Reactive,
                threshold=1,
                within=timedelta(0),
            ),
            actions=notify(
                "fundpipe: " + _WHICH + " {{ flow_run.state.name }} (" + _RUN_ORG + ")",
                _FAILED_BODY,
            ),
        )

    others = [f for f in FLOWS if f not in told_by_event]
    return [
        _run_ended(
            {"prefect.flow-run.Crashed"},
            FLOWS,
            "A fundpipe flow run crashed (its process died).",
            f"{PREFIX}a run crashed",
        ),
        _run_ended(
            {"prefect.flow-run.Failed"},
            others,
            "A fundpipe run ended Failed"
            + (
                f" ({', '.join(told_by_event)}: told per organization, fundpipe.night.failed)."
                if told_by_event
                else "."
            ),
            f"{PREFIX}a run failed",
        ),
        _on_each(
            f"{PREFIX}a night failed",
            "One organization's night failed (fundpipe.night.failed): its name, why, the "
            "service host, what to do.",
            NIGHT_FAILED,
            {"prefect.resource.id": "fundpipe.night.*"},
            notify("fundpipe: the night of {{ event.payload.name }} failed", _NIGHT_FAILED_BODY),
        ),
        _on_each(
            f"{PREFIX}a night completed late",
            "A night that missed its deadline completed after it (fundpipe.night.completed-late): "
            "the one message that closes its missed-night alert.",
            NIGHT_COMPLETED_LATE,
            {"prefect.resource.id": "fundpipe.night.*"},
            notify("fundpipe: the night of {{ event.payload.name }} completed late", _LATE_BODY),
        ),
        _on_each(
            f"{PREFIX}a file was rejected",
            "A dropped file was rejected (fundpipe.file.rejected); the exception it opens is "
            "told here, not once more.",
            FILE_REJECTED,
            {"prefect.resource.id": "fundpipe.file.*"},
            notify(
                "fundpipe: {{ event.payload.file }} rejected (" + _EVENT_ORG + ")",
                _REJECTED_BODY,
            ),
        ),
        _on_each(
            f"{PREFIX}an exception opened",
            "Reconciliation opened an exception no file's alert told (fundpipe.exception.opened).",
            EXCEPTION_OPENED,
            {"prefect.resource.id": "fundpipe.exception.*", "fundpipe.exception.alert": "own"},
            notify(
                "fundpipe: exception {{ event.payload.id }} opened (" + _EVENT_ORG + ")",
                _OPENED_BODY,
            ),
        ),
        *(
            missed_night_automation(block_id, org, name, complete_by, window, zone)
            for org, name in organizations
        ),
    ]


def _comparable(automation: Any) -> dict[str, Any]:
    """What an automation says, without its server-side ids."""
    data: dict[str, Any] = automation.model_dump(
        mode="json",
        include={"name", "description", "enabled", "trigger", "actions"},
    )
    data["trigger"].pop("id", None)
    for key in ("expect", "after", "for_each"):  # sets: their order means nothing
        if isinstance(data["trigger"].get(key), list):
            data["trigger"][key] = sorted(data["trigger"][key])
    return data


def describe(trigger: Any) -> str:
    """A trigger in one stable line: posture, the events it expects, and its window."""
    expect = ", ".join(sorted(getattr(trigger, "expect", ()) or ()))
    posture = getattr(trigger, "posture", "")
    posture = getattr(posture, "value", posture)
    within = getattr(trigger, "within", None)
    window = f" within {within}" if posture == "Proactive" and within else ""
    return f"{posture}: {expect}{window}"


#: Saves the alerts' webhook block for a webhook URL: its block document id and what became of it.
BlockSaver = Callable[[str], Awaitable[tuple[Any, Installed]]]


async def webhook_block(webhook: str) -> tuple[Any, Installed]:
    """Create or update the `fundpipe-alerts` webhook block for `webhook`; its document id and
    what became of it (unchanged when it already points there)."""
    from prefect.blocks.notifications import CustomWebhookNotificationBlock

    wanted = {"webhook_url": webhook}
    try:
        block = await CustomWebhookNotificationBlock.aload(BLOCK_NAME)
    except ValueError:
        block = None
    if block is not None and block.secrets.get_secret_value() == wanted:
        return block._block_document_id, Installed(BLOCK_NAME, "unchanged", "webhook block")
    outcome = "created" if block is None else "updated"
    block = CustomWebhookNotificationBlock(
        name="fundpipe alerts",
        url="{{webhook_url}}",
        method="POST",
        json_data={"subject": "{{subject}}", "text": "{{body}}"},
        secrets=wanted,  # type: ignore[arg-type]  # pydantic coerces the dict
    )
    block_id = await block.asave(BLOCK_NAME, overwrite=True)
    return block_id, Installed(BLOCK_NAME, outcome, "webhook block")


@dataclass(frozen=True)
class Night:
    """What the missed-night alerts watch: the organizations ((id, name) pairs), the deadline
    (HH:MM) and the zone both the deadline and the nightly's cron are read in, and the nightly's
    cron (its scheduled run opens each night's window)."""

    organizations: Sequence[tuple[str, str]]
    complete_by: str
    zone: str
    nightly_cron: str


async def _nightly_cron(client: Any, default: str) -> tuple[str, str | None]:
    """The cron of the `nightly` deployment's active schedule on the server (and a note when it
    is not the configured one); ``default`` when it is not deployed (yet)."""
    try:
        deployment = await client.read_deployment_by_name(f"{NIGHTLY}/{NIGHTLY}")
    except Exception:  # not deployed yet: the configured cron is the one it will get
        return default, None
    crons = [
        str(s.schedule.cron)
        for s in deployment.schedules or []
        if s.active and getattr(s.schedule, "cron", None)
    ]
    if not crons or default in crons:
        return default, None
    return crons[0], f"the nightly deployment runs at '{crons[0]}', not '{default}': using it"


async def _install(
    webhook: str, night: Night, save_block: BlockSaver
) -> tuple[list[Installed], list[str]]:
    from prefect.client.orchestration import get_client

    from fundpipe.app.prefect.deadline import night_window
    from fundpipe.errors import InputError

    block_id, done = await save_block(webhook)
    report = [done]
    notes: list[str] = []
    async with get_client() as client:
        cron, note = await _nightly_cron(client, night.nightly_cron)
        notes += [note] if note else []
        organizations = night.organizations
        try:
            window = night_window(cron, night.complete_by)
        except InputError as exc:  # a trial's "* * * * *": no night to miss by an hour
            notes.append(f"{exc}; the missed-night alerts are not installed")
            window, organizations = timedelta(hours=24), ()
        if window < ORDERING_DELAY:
            notes.append(
                f"the nightly runs {window} before the deadline: the server may see its "
                "scheduled run come due up to 15 minutes late, and the alert with it"
            )
        wanted_all = automations(block_id, night.complete_by, organizations, window, night.zone)
        for wanted in wanted_all:
            existing = await client.read_automations_by_name(wanted.name)
            for extra in existing[1:]:
                await client.delete_automation(extra.id)
            if not existing:
                await client.create_automation(wanted)
                outcome = "created"
            elif _comparable(existing[0]) != _comparable(wanted):
                await client.update_automation(existing[0].id, wanted)
                outcome = "updated"
            else:
                outcome = "unchanged"
            report.append(Installed(wanted.name, outcome, wanted.description))
        names = {w.name for w in wanted_all}
        for stale in await client.read_automations():
            if stale.name.startswith(PREFIX) and stale.name not in names:
                await client.delete_automation(stale.id)
                report.append(Installed(stale.name, "deleted", "no longer a fundpipe alert"))
    return report, notes


def install(
    webhook: str, night: Night, *, save_block: BlockSaver = webhook_block
) -> tuple[list[Installed], list[str]]:
    """Create or update the webhook block and the automations; report what each became, and
    notes for the person installing (the nightly deployment's cron, when it differs from the
    configured one: the missed-night window counts from the deployed one). `save_block` saves
    the webhook block (a test hands a stand-in)."""
    return asyncio.run(_install(webhook, night, save_block))


async def _list() -> list[dict[str, Any]]:
    from prefect.client.orchestration import get_client

    async with get_client() as client:
        found = await client.read_automations()
    return [
        {
            "name": a.name,
            "enabled": a.enabled,
            "trigger": describe(a.trigger),
            "actions": [action.type for action in a.actions],
            "description": a.description,
            "id": str(a.id),
        }
        for a in sorted(found, key=lambda a: a.name)
        if a.name.startswith(PREFIX)
    ]


def installed() -> list[dict[str, Any]]:
    """The fundpipe automations on the server: name, enabled, trigger, actions, description."""
    return asyncio.run(_list())

"""Alerts through Prefect's own automations: `fundpipe alerts install` / `fundpipe alerts list`.

On the server named by `PREFECT_API_URL`, one webhook notification block
(:data:`BLOCK_NAME`, a `CustomWebhookNotificationBlock` that POSTs ``{"subject", "text"}`` as
JSON; the URL is kept among the block's secret values) and one automation per alert, each
sending a notification through that block:

| automation | fires when | says |
|---|---|---|
| ``fundpipe: a run failed or crashed`` | a fundpipe deployment's flow run ends Failed or Crashed | deployment, run, plain reason |
| ``fundpipe: no night completed`` | no ``fundpipe.night.completed`` event by the configured hour (proactive) | the deadline, where to look |
| ``fundpipe: a file was rejected`` | ``fundpipe.file.rejected`` | file, reason, error report |
| ``fundpipe: an exception opened`` | ``fundpipe.exception.opened`` | exception id, what, amount, what to do |

Installing is idempotent: automations are matched by name; one that already says the same is
left alone, one that differs is updated, duplicates are deleted.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import time, timedelta
from typing import Any

from fundpipe.app.prefect.oncall import EXCEPTION_OPENED, FILE_REJECTED, NIGHT_COMPLETED

#: The notification block's name on the server.
BLOCK_NAME = "fundpipe-alerts"
#: Every fundpipe automation's name starts with this.
PREFIX = "fundpipe: "
#: The flows whose deployments' runs are watched for Failed / Crashed.
FLOWS = ["nightly", "inbox", "ingest_file", "sync", "reconcile"]

_FAILED_BODY = (
    "Deployment {{ flow.name }}/{{ deployment.name }}: run {{ flow_run.name }} ended "
    "{{ flow_run.state.name }}: {{ flow_run.state.message }}\n"
    "Flow run id: {{ flow_run.id }}. The run's Logs tab in the Prefect UI tells the night."
)
_REJECTED_BODY = (
    "{{ event.payload.file }} was rejected ({{ event.payload.organization }}, "
    "{{ event.payload.rows }} row(s)): {{ event.payload.reason }}.\n"
    "Error report: {{ event.payload.error_report }}. Correct the file and drop it again."
)
_OPENED_BODY = (
    "Exception {{ event.payload.id }} opened ({{ event.payload.organization }}): "
    "{{ event.payload.what }} — {{ event.payload.amount }}.\n"
    "To do: {{ event.payload.what_to_do }}"
)


@dataclass(frozen=True)
class Installed:
    """One automation (or the block) and what installing did to it."""

    name: str
    outcome: str  # created, updated, unchanged
    detail: str = ""


def night_window(cron: str, complete_by: time) -> timedelta:
    """How long after a night completes the next one must have completed: a day, plus the gap
    from the nightly cron's start to ``complete_by``. A cron that is not one fixed time a day
    (a trial's ``* * * * *``) gives a plain day."""
    fields = cron.split()
    if len(fields) == 5 and fields[0].isdigit() and fields[1].isdigit():
        start = timedelta(hours=int(fields[1]), minutes=int(fields[0]))
        deadline = timedelta(hours=complete_by.hour, minutes=complete_by.minute)
        return timedelta(days=1) + (deadline - start) % timedelta(days=1)
    return timedelta(days=1)


def automations(block_id: Any, window: timedelta, complete_by: str) -> list[Any]:
    """The four automations (Prefect `AutomationCore`), each notifying through ``block_id``."""
    from prefect.events.actions import SendNotification
    from prefect.events.schemas.automations import AutomationCore, EventTrigger, Posture

    def notify(subject: str, body: str) -> list[Any]:
        return [SendNotification(block_document_id=block_id, subject=subject, body=body)]

    def _on_each(name: str, description: str, event: str, resource: str, actions: list[Any]) -> Any:
        """An automation that fires on every `event` of a resource matching `resource`."""
        trigger = EventTrigger(
            expect={event},
            match={"prefect.resource.id": resource},
            posture=Posture.Reactive,
            threshold=1,
            within=timedelta(0),
        )
        return AutomationCore(name=name, description=description, trigger=trigger, actions=actions)

    hours = window.total_seconds() / 3600
    return [
        AutomationCore(
            name=f"{PREFIX}a run failed or crashed",
            description="A fundpipe deployment's flow run ended Failed or Crashed.",
            trigger=EventTrigger(
                expect={"prefect.flow-run.Failed", "prefect.flow-run.Crashed"},
                match={"prefect.resource.id": "prefect.flow-run.*"},
                match_related=[
                    {"prefect.resource.role": "flow", "prefect.resource.name": FLOWS},
                    {"prefect.resource.role": "deployment"},
                ],
                posture=Posture.Reactive,
                threshold=1,
                within=timedelta(0),
            ),
            actions=notify(
                "fundpipe: {{ flow.name }}/{{ deployment.name }} {{ flow_run.state.name }}",
                _FAILED_BODY,
            ),
        ),
        AutomationCore(
            name=f"{PREFIX}no night completed",
            description=f"No fundpipe night completed by {complete_by} "
            f"({hours:g} h after the last one).",
            trigger=EventTrigger(
                expect={NIGHT_COMPLETED},
                match={"prefect.resource.id": "fundpipe.night.*"},
                posture=Posture.Proactive,
                threshold=1,
                within=window,
            ),
            actions=notify(
                "fundpipe: no night completed by " + complete_by,
                f"No fundpipe night completed by {complete_by}: none in the {hours:g} h since "
                "the last one. Look at the nightly deployment's runs and at the worker.",
            ),
        ),
        _on_each(
            f"{PREFIX}a file was rejected",
            "A dropped file was rejected (fundpipe.file.rejected).",
            FILE_REJECTED,
            "fundpipe.file.*",
            notify("fundpipe: {{ event.payload.file }} rejected", _REJECTED_BODY),
        ),
        _on_each(
            f"{PREFIX}an exception opened",
            "Reconciliation opened an exception (fundpipe.exception.opened).",
            EXCEPTION_OPENED,
            "fundpipe.exception.*",
            notify("fundpipe: exception {{ event.payload.id }} opened", _OPENED_BODY),
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


async def _block(webhook: str) -> tuple[Any, Installed]:
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


async def _install(webhook: str, window: timedelta, complete_by: str) -> list[Installed]:
    from prefect.client.orchestration import get_client

    block_id, done = await _block(webhook)
    report = [done]
    async with get_client() as client:
        for wanted in automations(block_id, window, complete_by):
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
    return report


def install(webhook: str, cron: str, complete_by: time) -> list[Installed]:
    """Create or update the webhook block and the automations; report what each became."""
    window = night_window(cron, complete_by)
    return asyncio.run(_install(webhook, window, complete_by.strftime("%H:%M")))


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

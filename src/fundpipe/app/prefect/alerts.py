"""Alerts through Prefect's own automations: `fundpipe alerts install` / `fundpipe alerts list`.

On the server named by `PREFECT_API_URL`, one webhook notification block
(:data:`BLOCK_NAME`, a `CustomWebhookNotificationBlock` that POSTs ``{"subject", "text"}`` as
JSON; the URL is kept among the block's secret values) and one automation per alert, each
sending a notification through that block:

| automation | fires when | says |
|---|---|---|
| ``fundpipe: a run failed or crashed`` | a fundpipe flow run ends Failed or Crashed (a deployment's, or a plain `fundpipe run`'s) | flow, deployment if any, run, plain reason |
| ``fundpipe: no night completed`` | ``fundpipe.night.missed``: the `night-check` run at the deadline found no completed night for an organization (`fundpipe.app.prefect.deadline` says why not a proactive trigger) | the organization, the deadline, where to look |
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

from fundpipe.app.prefect.deadline import MISSED
from fundpipe.app.prefect.oncall import EXCEPTION_OPENED, FILE_REJECTED

#: The notification block's name on the server.
BLOCK_NAME = "fundpipe-alerts"
#: Every fundpipe automation's name starts with this.
PREFIX = "fundpipe: "
#: The flows whose deployments' runs are watched for Failed / Crashed.
FLOWS = ["nightly", "org-night", "inbox", "ingest_file", "sync", "reconcile", "night-check"]

#: "flow/deployment", or the flow alone for a run outside a deployment (`fundpipe run`).
_WHICH = "{{ flow.name }}{% if deployment %}/{{ deployment.name }}{% endif %}"
_FAILED_BODY = (
    "{% if deployment %}Deployment{% else %}Flow{% endif %} " + _WHICH + ": run "
    "{{ flow_run.name }} ended {{ flow_run.state.name }}: {{ flow_run.state.message }}\n"
    "Flow run id: {{ flow_run.id }}. The run's Logs tab in the Prefect UI tells the night."
)
_MISSED_BODY = (
    "No fundpipe night completed for {{ event.payload.organization }} by "
    "{{ event.payload.complete_by }} ({{ event.payload.timezone }}): none since "
    "{{ event.payload.since }}. Look at its org-night runs and at the worker of its queue."
)
# every optional field is left out when empty, never printed as a blank
_REJECTED_BODY = (
    "{{ event.payload.file }} was rejected ({{ event.payload.organization }}, "
    "{{ event.payload.rows }} row(s)): {{ event.payload.reason }}.\n"
    "{% if event.payload.error_report %}Error report: {{ event.payload.error_report }}. "
    "{% endif %}Correct the file and drop it again."
)
_OPENED_BODY = (
    "Exception {{ event.payload.id }} opened ({{ event.payload.organization }}): "
    "{{ event.payload.what }}{% if event.payload.amount %} — {{ event.payload.amount }}"
    "{% endif %}.{% if event.payload.what_to_do %}\nTo do: {{ event.payload.what_to_do }}"
    "{% endif %}"
)


@dataclass(frozen=True)
class Installed:
    """One automation (or the block) and what installing did to it."""

    name: str
    outcome: str  # created, updated, unchanged
    detail: str = ""


def automations(block_id: Any, complete_by: str) -> list[Any]:
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

    return [
        AutomationCore(
            name=f"{PREFIX}a run failed or crashed",
            description="A fundpipe flow run ended Failed or Crashed (a deployment's, or a "
            "plain `fundpipe run`'s).",
            trigger=EventTrigger(
                expect={"prefect.flow-run.Failed", "prefect.flow-run.Crashed"},
                match={"prefect.resource.id": "prefect.flow-run.*"},
                match_related={"prefect.resource.role": "flow", "prefect.resource.name": FLOWS},
                posture=Posture.Reactive,
                threshold=1,
                within=timedelta(0),
            ),
            actions=notify(
                "fundpipe: " + _WHICH + " {{ flow_run.state.name }}",
                _FAILED_BODY,
            ),
        ),
        _on_each(
            f"{PREFIX}no night completed",
            f"An organization had no completed night by {complete_by}: the night-check "
            "deployment, scheduled then, emitted fundpipe.night.missed for it.",
            MISSED,
            "fundpipe.night.*",
            notify(
                "fundpipe: no night completed for {{ event.payload.organization }} by "
                "{{ event.payload.complete_by }}",
                _MISSED_BODY,
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


async def _install(webhook: str, complete_by: str) -> list[Installed]:
    from prefect.client.orchestration import get_client

    block_id, done = await _block(webhook)
    report = [done]
    async with get_client() as client:
        for wanted in automations(block_id, complete_by):
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


def install(webhook: str, complete_by: time) -> list[Installed]:
    """Create or update the webhook block and the automations; report what each became.

    `complete_by` is the deadline the missed-night automation's description names; the check
    itself runs on the `night-check` deployment's schedule (`fundpipe.app.prefect.deadline`)."""
    return asyncio.run(_install(webhook, complete_by.strftime("%H:%M")))


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

"""Paused deployments: which fundpipe deployments `fundpipe serve` finds paused on the Prefect
server when it starts, who paused each, and what it does about it.

**Nothing of ours pauses.** `fundpipe serve` serves with ``pause_on_shutdown=False``: the nights
belong to the server, not to the process that serves them, so a stopped serve (SIGTERM from a
deploy or a reboot, SIGKILL, a lost machine) leaves every schedule running. Its runs fall due with
nobody to take them, go *Late*, and the server's own missed-night automation tells someone by the
deadline (`fundpipe.app.prefect.deadline`). An older fundpipe served with Prefect's default
(``pause_on_shutdown=True``) and left all four deployments paused on its way out.

**A person's pause is kept.** Prefect registers a served deployment with ``paused=False`` when
it is not told otherwise, so every start of serve used to resume what a person had paused on
purpose. Each deployment found paused is now registered paused again — unless the pause was an
older serve's, which is resumed — and each gets one line saying which it is.

**Who paused it**, from what the server records itself (no marker is needed: this fundpipe
never pauses, and the older one that did wrote none):

- every change of a deployment's ``paused`` is a ``prefect.deployment.updated`` event, with the
  time it happened on the server's clock;
- the deployment's ``last_polled`` is the last time the process serving it asked for runs (every
  2 s while `fundpipe serve` runs), on the same clock.

A stopping serve paused its deployments in its last moments, within :data:`SHUTDOWN_PAUSE` after
its last poll. A person pauses either while serve runs — serve goes on polling, so its last poll
comes after the pause (and its own pause on the way out changed nothing, so no event) — or
while nothing serves, long after the last poll. A pause whose event the server no longer holds
(it keeps events 7 days by default) is not known to be ours and is kept: fundpipe never resumes
what it cannot show it paused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = [
    "SHUTDOWN_PAUSE",
    "PausedDeployment",
    "find_paused",
    "keep_pauses",
    "paused_by_serve",
    "saying",
]

#: How long after its last poll a stopping serve's pause can come: its last poll (every 2 s, or
#: Prefect's default 10 s), then cancelling a run in progress, then one pause per deployment.
SHUTDOWN_PAUSE = timedelta(seconds=60)
#: The event the server records for a change of a deployment's fields.
UPDATED = "prefect.deployment.updated"


@dataclass(frozen=True)
class PausedDeployment:
    """A fundpipe deployment found paused: its ``flow/deployment`` name, id, when it was
    paused (None when the server no longer says) and whether a stopping serve paused it."""

    name: str
    id: str
    paused_at: datetime | None
    by_serve: bool


def paused_by_serve(paused_at: datetime | None, last_polled: datetime | None) -> bool:
    """True when a pause at ``paused_at`` was a stopping serve's: within :data:`SHUTDOWN_PAUSE`
    after the serve's last poll at ``last_polled`` (both on the server's clock). Unknown times
    are a person's pause, kept."""
    if paused_at is None or last_polled is None:
        return False
    return timedelta(0) <= paused_at - last_polled <= SHUTDOWN_PAUSE


def saying(found: PausedDeployment, ui_url: str) -> str:
    """One line for a paused deployment: which, who paused it, what serve does, how to resume."""
    when = f" at {found.paused_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC" if found.paused_at else ""
    if found.by_serve:
        return (
            f"deployment {found.name} was paused{when} by an older `fundpipe serve` as it "
            "stopped: resumed"
        )
    who = "not by fundpipe serve" if found.paused_at else "by whom the server no longer says"
    return (
        f"deployment {found.name} is paused ({who}{when}): it stays paused and none of its runs "
        f"is scheduled; resume it with the toggle on {ui_url}/deployments/deployment/{found.id}"
    )


async def _paused_at(client: Any, deployment_id: Any) -> datetime | None:
    """When the deployment was last paused: its newest ``prefect.deployment.updated`` event
    whose ``paused`` went to true (None when the server holds none, or cannot say)."""
    import httpx
    from pydantic import TypeAdapter

    body = {
        "filter": {
            "event": {"name": [UPDATED]},
            "resource": {"id": [f"prefect.deployment.{deployment_id}"]},
            "order": "DESC",
        },
        "limit": 50,
    }
    try:
        answer = await client._client.post("/events/filter", json=body)  # no client method
        answer.raise_for_status()
        page: dict[str, Any] = answer.json()
        while True:
            for event in page.get("events", []):
                change = ((event.get("payload") or {}).get("updates") or {}).get("paused") or {}
                if change.get("to") is True:
                    return TypeAdapter(datetime).validate_python(event["occurred"])
            if not page.get("next_page"):
                return None
            more = await client._client.get(page["next_page"])
            more.raise_for_status()
            page = more.json()
    except httpx.HTTPError:  # cannot say who paused it: kept as a person's
        return None


async def find_paused(names: Sequence[str]) -> list[PausedDeployment]:
    """The deployments of ``names`` (``flow/deployment``) that are paused on the server named by
    ``PREFECT_API_URL``, each with who paused it; one not deployed yet is not paused."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    found: list[PausedDeployment] = []
    async with get_client() as client:
        for name in names:
            try:
                deployment = await client.read_deployment_by_name(name)
            except ObjectNotFound:
                continue
            if not deployment.paused:
                continue
            at = await _paused_at(client, deployment.id)
            found.append(
                PausedDeployment(
                    name, str(deployment.id), at, paused_by_serve(at, deployment.last_polled)
                )
            )
    return found


def keep_pauses(served: list[Any], say: Callable[[str], object]) -> list[Any]:
    """The deployments to serve (Prefect `RunnerDeployment`s), each registered paused when a
    person paused it on the server, and not paused otherwise (an older serve's pause resumed);
    one line through ``say`` for each found paused."""
    import asyncio

    import httpx
    from prefect.settings import PREFECT_API_URL, PREFECT_UI_URL

    from fundpipe.errors import ConfigurationError

    try:
        paused = asyncio.run(find_paused([f"{d.flow_name}/{d.name}" for d in served]))
    except httpx.TransportError as exc:  # the first call of serve to the server
        raise ConfigurationError(
            f"the Prefect server at {PREFECT_API_URL.value()} (PREFECT_API_URL) does not answer "
            f"({type(exc).__name__}): start it, or unset PREFECT_API_URL for `fundpipe serve` "
            "to start one of its own"
        ) from exc
    ui_url = str(PREFECT_UI_URL.value() or "").rstrip("/")
    for found in paused:
        say(saying(found, ui_url))
    kept = {found.name for found in paused if not found.by_serve}
    for deployment in served:
        # left unset, Prefect registers it with paused=False: a person's pause would be undone
        deployment.paused = f"{deployment.flow_name}/{deployment.name}" in kept
    return served

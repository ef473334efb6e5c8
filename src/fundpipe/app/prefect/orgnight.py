"""One organization's night, the `org-night` flow each child run of `nightly` is, and the host's
concurrency limit and rate it holds while it talks to the service.

`org_night` (the flow behind `fundpipe.app.prefect.flows.org_night` and the
`org-night/org-night` deployment) runs `fundpipe.night.night` (ingest → sync → reconcile, the
library's one sequence, each step a Prefect task through `steps.prefect_step`) for its
organization with its own settings (`Settings.for_org`: `data/orgs/<org>/`,
`data/reports/<org>/`), and holds one slot of the Prefect global concurrency limit
`fundpipe-service-<host>` (`FUNDPIPE_ORG_CONCURRENCY`, default 2; created when missing) while it
talks to the service. Its client's rate follows one rule: with `FUNDPIPE_HOST_RATE_LIMIT_PER_S`
set (the host's limit for all organizations together), each child runs at
min(`FUNDPIPE_RATE_LIMIT_PER_S`, host rate / min(limit, organizations on the host)), so the
children holding slots at once never exceed the host's rate; unset, the service limits each
client and organization on its own and each child keeps its rate.

A child's failure (a rejected file, the service down, the inbox locked, any exception) ends that
child only: it publishes its FAILED verdict and leaves its exit code for the parent
(`fundpipe.app.prefect.handoff`). The parent, which starts one child per organization, is
`fundpipe.app.prefect.fanout`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import date
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from prefect import State, flow, get_run_logger
from prefect.states import Completed

from fundpipe.app.embedded import limit_name, shared_rate
from fundpipe.app.prefect.handoff import leave_exit_code as _leave_exit_code
from fundpipe.app.prefect.handoff import leave_row as _leave_row
from fundpipe.app.prefect.nightsummary import org_row
from fundpipe.config import Organization, Settings
from fundpipe.nights import OrgNight

if TYPE_CHECKING:
    from fundpipe.app.prefect.verdict_state import VerdictLine
    from fundpipe.submit import FileOutcome

__all__ = [
    "ORG_DEPLOYMENT",
    "ORG_FLOW",
    "ensure_limit",
    "limit_name",
    "org_night",
    "service_slot",
    "shared_rate",
]

#: The per-organization flow, and its deployment (flows/prefect.yaml, `fundpipe serve`).
ORG_FLOW = "org-night"
ORG_DEPLOYMENT = f"{ORG_FLOW}/{ORG_FLOW}"


def ensure_limit(name: str, limit: int) -> None:
    """Create the global concurrency limit `name` (or set its limit) on the Prefect server."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        client.upsert_global_concurrency_limit_by_name(name, limit)


@contextmanager
def service_slot(settings: Settings) -> Iterator[None]:
    """Hold one slot of the service host's global concurrency limit (created when missing)."""
    from prefect.concurrency.sync import concurrency

    name = limit_name(settings)
    ensure_limit(name, settings.orchestration.org_concurrency)
    with concurrency(name, occupy=1, strict=True):
        yield


@flow(name=ORG_FLOW)
def org_night(
    org: str = "",
    as_of: str | None = None,
    data_dir: str | None = None,
    base_url: str | None = None,
    orgs_on_host: int = 1,
    several: bool = False,
    name: str = "",
) -> State[Any]:
    """One organization's night: ingest its inbox, sync, reconcile, report.

    `org` is the organization's id ("" for the client's own, unnamed one); `base_url` is the
    embedded sandbox of the parent run (None with a configured service); `orgs_on_host` how
    many organizations share its service host; `several` whether more than one runs; `name`
    the name people know it by, as the parent found it (the service's), for its verdict.
    """
    from fundpipe.app.prefect.steps import _guard
    from fundpipe.app.prefect.verdict_state import needs_a_person_state

    who: dict[str, Any] = {"name": name, "as_of": as_of}
    final = _guard(_org_night, org, as_of, data_dir, base_url, orgs_on_host, several, who)
    if not final.is_completed() and not needs_a_person_state(final):
        _stopped(org, final, who)
    return final


def _stopped(org_id: str, final: State[Any], who: dict[str, Any]) -> None:
    """A child whose night did not complete: its verdict first (FAILED: why, on which host,
    what to do), its exit code for the parent last; and, run on its own (no nightly run above
    it to tell it) and failed (not stopped by another run holding its files), its one
    `fundpipe.night.failed` alert."""
    from prefect.runtime import flow_run

    from fundpipe.app.prefect.tell import tell_night_failed
    from fundpipe.app.prefect.verdict_state import VerdictLine, next_step_for, publish_verdict
    from fundpipe.errors import ExitCode, FundpipeError
    from fundpipe.vocabulary import Verdict

    error = final.data
    code = int(error.exit_code if isinstance(error, FundpipeError) else ExitCode.INTERNAL)
    org: Organization | None = who.get("org")
    settings: Settings | None = who.get("settings")
    name = (org.name if org is not None else "") or who.get("name") or org_id or "its own"
    name = f"{name} ({org_id})" if org_id and name != org_id else name
    host = urlsplit(settings.service.base_url or "").hostname or "" if settings is not None else ""
    line = VerdictLine(
        org_id,
        name,
        Verdict.FAILED,
        why=final.message or "the night did not complete",
        host=host,
        next_step=next_step_for(code, host),
    )
    from fundpipe.app.prefect.uiview import night_date

    zone = settings.pipeline.reporting_timezone if settings is not None else "UTC"
    try:
        # the night's date, as its run's name and its artifacts have it
        publish_verdict([line], date.fromisoformat(night_date(who.get("as_of"), zone)))
        alone = flow_run.get_parent_flow_run_id() is None
        if settings is not None and final.is_failed() and alone:
            tell_night_failed(org_id, name, line.why, host, line.next_step, settings)
    finally:
        _leave_exit_code(final)


def _org_settings(
    top: Settings, org_id: str, orgs_on_host: int, several: bool
) -> tuple[Organization, Settings]:
    """The child's organization and settings (`fundpipe.orgs.org_settings`: the configured
    entry, or the id the parent found; the secret from its Prefect Secret block), at its share
    of the host's rate."""
    from fundpipe.app.prefect.secrets import with_secret_block
    from fundpipe.orgs import Among, org_settings

    org, settings = org_settings(
        top,
        org_id or None,
        among=Among.CONFIGURED,
        load_secret=with_secret_block,
        several=several,
    )
    return org, shared_rate(settings, orgs_on_host)


def _org_night(
    org_id: str,
    as_of: str | None,
    data_dir: str | None,
    base_url: str | None,
    orgs_on_host: int,
    several: bool,
    who: dict[str, Any],
) -> State[Any]:
    from fundpipe.app.embedded import attach
    from fundpipe.app.prefect import steps
    from fundpipe.app.prefect.links import openable
    from fundpipe.app.prefect.sharing import publish_org
    from fundpipe.app.prefect.tell import NAMED, tell_incidents, tell_rejected
    from fundpipe.app.prefect.verdict_state import (
        line_of,
        night_state,
        publish_health,
        publish_verdict,
    )
    from fundpipe.night import night as run_the_night

    top = steps._settings(data_dir)
    if base_url and top.service.embedded:
        top = attach(top, base_url)
    org, settings = _org_settings(top, org_id, orgs_on_host, several)
    if who.get("name") and not org.name:  # the name the parent found (the service's)
        org = replace(org, name=who["name"])
    if org.name and not settings.service.org_name:  # the reports name it too, not its id
        settings = settings.updated(service={"org_name": org.name})
    who.update(org=org, settings=settings)
    if org.name:  # every event of this night names it (the alerts' subjects)
        NAMED.set(org.name)
    get_run_logger().info(
        "organization %s: state in %s, reports in %s",
        org.label,
        settings.local.data_dir,
        settings.local.reports_folder,
    )
    # `fundpipe.night.night`, the one sequence: each step a Prefect task (the UI shows each),
    # ingest and sync holding the host's slot
    # the alerts' events wait for the reports to be published, so each links its report
    held: dict[str, Any] = {}
    try:
        night = run_the_night(
            settings,
            as_of=date.fromisoformat(as_of) if as_of else None,
            around_service=lambda: service_slot(settings),
            step=steps.prefect_step(settings, held),
        )
    except steps.StepStopped as stopped:
        if "ingest" in held:  # a later step stopped: each rejected file is still its alert
            tell_rejected(held["ingest"].by_state("rejected"), settings)
        return stopped.state
    summary = OrgNight.of(org.folder, night)
    try:
        summary = replace(summary, published=publish_org(org, summary, settings))
    finally:  # published or not (then: each report's path on this machine), every alert goes
        tell_incidents(summary, settings)
    # the verdict first (the first artifact a person sees), then the health page, the night's
    # artifacts, and last the row the parent reads (internal)
    row = org_row(org, Completed(), summary)
    lines = [line_of(row)]
    link = openable(
        summary.url_of(summary.workbook),
        settings.local.reports_url,
        settings.local.reports_public_url,
    )
    publish_verdict(lines, summary.as_of, {org.folder: link} if link else {})
    publish_health(lines, summary.as_of)
    steps.publish(summary, settings)
    _tell_the_night(summary, night.files, lines, settings)
    # the child's result: the small typed summary (the night's plan stays behind), in a state
    # that is not green when the night needs a person
    final = night_state(lines, data=summary)
    _leave_row(org, summary, final)
    return final  # type: ignore[no-any-return]


def _tell_the_night(
    summary: OrgNight,
    files: Sequence[FileOutcome],
    lines: Sequence[VerdictLine],
    settings: Settings,
) -> None:
    """The night's summary line, named by this run's own flow (``org-night: 2 files seen,
    …``), where its reports are, its `fundpipe.night.completed` event; and, when the night
    needs a person, its verdict as a WARNING (the organization by name: what, how much, by
    when), so the run's Logs tab shows it as one."""
    from fundpipe.app.prefect import steps
    from fundpipe.app.prefect.tell import tell_needs_a_person, tell_night

    tell_night(summary, settings, steps._sentence(ORG_FLOW, files, summary.exceptions_found))
    tell_needs_a_person(lines, settings)

"""Every organization in one night: the `nightly` flow fans out to one `org-night` run each.

`run_night` (the body of `fundpipe.app.prefect.flows.nightly`) resolves the organizations
(`fundpipe.orgs.organizations`), moves a single-organization layout once
(`fundpipe.layout.migrate_layout`), copies samples when asked, and starts one child run of
`org_night` per organization, concurrently, in one of two ways (`FUNDPIPE_FAN_OUT`, or the
flow's `fan_out` parameter):

- `subflows` (default): child flow runs in this process, one thread each;
- `deployments`: `run_deployment("org-night/org-night")` for each organization, so any worker
  of the work pool takes one (`flows/prefect.yaml` declares the deployment; `fundpipe serve`
  serves it), or, for an organization whose entry names a `work_queue`, any worker of that
  queue of the pool (an organization's night runs where its files are). The child reads its organization's settings from its own environment; only the
  organization's id, the report date, the data directory and the embedded sandbox's URL travel
  as parameters, never a secret.

Each child (`fundpipe.app.prefect.orgnight`: the flow, the host's concurrency limit and the
rate it shares; re-exported here) runs `fundpipe.night.night` for its organization with its own
settings, holding one slot of the service host's limit while it talks to the service.

A child's failure (a rejected file, the service down, the inbox locked, any exception) ends
that child only. The parent ends Completed when every child did, else Failed naming each
organization that did not and why; its artifact is the cross-organization table (files,
distributions, totals, open exceptions, state, and a link to each child run).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import date, datetime
from typing import Any
from urllib.parse import urlsplit

from prefect import State, get_run_logger
from prefect.artifacts import create_markdown_artifact

from fundpipe.app.prefect import handoff, oncall
from fundpipe.app.prefect.nightsummary import carried, cross_markdown, org_row, run_link
from fundpipe.app.prefect.orgnight import (
    ORG_DEPLOYMENT,
    ORG_FLOW,
    ensure_limit,
    limit_name,
    org_night,
    service_slot,
    shared_rate,
)
from fundpipe.app.prefect.orgnight import _org_settings as _org_settings
from fundpipe.app.prefect.tell import tell_late
from fundpipe.app.prefect.uiview import org_tags
from fundpipe.config import Organization, Settings
from fundpipe.errors import ExitCode
from fundpipe.nights import Nights, NightsFailed, OrgNight, OrgRow, nights

__all__ = [
    "ORG_DEPLOYMENT",
    "ORG_FLOW",
    "fan_out",
    "limit_name",
    "org_night",
    "run_night",
    "service_slot",
    "shared_rate",
]

# --- the parent --------------------------------------------------------------------------------------


def _child_subflow(org: Organization, params: dict[str, Any]) -> OrgRow:
    from prefect import tags

    from fundpipe.errors import FundpipeError

    with tags(*org_tags(org.folder, org.name)):
        state = org_night(**params, return_state=True)
    data = carried(state.result(raise_on_failure=False) if state.data is not None else None)
    row = org_row(org, state, data if isinstance(data, OrgNight) else None)
    if isinstance(data, FundpipeError):
        row = replace(row, exit_code=int(data.exit_code))
    elif not row.completed:  # crashed, or failed with no error of ours: a bug
        row = replace(row, exit_code=int(ExitCode.INTERNAL))
    return replace(row, run=run_link(state.state_details.flow_run_id))


def _child_deployment(org: Organization, params: dict[str, Any]) -> OrgRow:
    from prefect.client.schemas.objects import FlowRun
    from prefect.deployments import run_deployment

    run: FlowRun = run_deployment(  # type: ignore[assignment,call-arg]  # the sync form
        ORG_DEPLOYMENT,
        parameters=params,
        timeout=None,
        work_queue_name=org.work_queue,
        tags=org_tags(org.folder, org.name),
        _sync=True,
    )
    # the child's own row, as it left it (a stopped night left only its exit code)
    row = org_row(org, run.state, None).with_json(handoff.row_left_by(run.id))
    completed = row.completed
    return replace(
        row,
        message=(run.state.message if run.state is not None else "") or "",
        # the child's own exit code, else 5: a run that crashed or left none is a bug's
        exit_code=row.exit_code if completed else (row.exit_code or int(ExitCode.INTERNAL)),
        exceptions=row.exceptions if completed else (),
        run=run_link(run.id),
    )


def check_deployment() -> None:
    """Stop the night before any child starts (exit 2) when the Prefect server holds no
    `org-night/org-night` deployment: without it every organization would fail alike."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    from fundpipe.errors import ConfigurationError

    with get_client(sync_client=True) as client:
        try:
            client.read_deployment_by_name(ORG_DEPLOYMENT)
        except ObjectNotFound:
            raise ConfigurationError(
                f"FUNDPIPE_FAN_OUT=deployments, but the Prefect server at {client.api_url} has no "
                f"{ORG_DEPLOYMENT} deployment: deploy flows/prefect.yaml (prefect deploy --all) "
                "and start a worker, run `fundpipe serve`, or unset FUNDPIPE_FAN_OUT"
            ) from None


def _start(mode: str, org: Organization, params: dict[str, Any], host: str) -> OrgRow:
    """Run one child and return its row; nothing it raises reaches the other children (an
    unexpected exception is logged with its traceback here, and the row says exit 5)."""
    try:
        row = (
            _child_deployment(org, params) if mode == "deployments" else _child_subflow(org, params)
        )
    except Exception as exc:  # one organization's failure never stops the others
        from fundpipe.errors import InternalError, as_fundpipe_error

        error = as_fundpipe_error(exc)
        if isinstance(error, InternalError):
            get_run_logger().error("internal error in %s's night", org.label, exc_info=exc)
            error = error.logged_at("the nightly run's log")
        row = replace(org_row(org, None, None), message=str(error), exit_code=int(error.exit_code))
    return replace(row, host=host)


def fan_out(
    live: Settings,
    orgs: Sequence[Organization],
    *,
    as_of: str | None,
    data_dir: str | None,
    base_url: str | None,
    mode: str,
) -> Nights:
    """Every organization's night (`fundpipe.nights.nights`), one child run each, concurrently.

    The seam to run the night elsewhere: `mode` "deployments" starts `org-night/org-night`
    runs any worker of the pool may take; "subflows" runs them in this process.
    """
    hosts: dict[str, int] = {}
    for org in orgs:
        name = limit_name(live.updated(service={"base_url": org.base_url or live.service.base_url}))
        hosts[name] = hosts.get(name, 0) + 1
    for name in hosts:
        ensure_limit(name, live.orchestration.org_concurrency)
    if mode == "deployments":
        check_deployment()

    def run_one(org: Organization) -> OrgRow:
        url = org.base_url or live.service.base_url
        name = limit_name(live.updated(service={"base_url": url}))
        params = {
            "org": org.id or "",
            "as_of": as_of,
            "data_dir": data_dir,
            "base_url": base_url,
            "orgs_on_host": hosts[name],
            "several": len(orgs) > 1,
            "name": org.name or "",
        }
        return _start(mode, org, params, urlsplit(url or "").hostname or "embedded")

    return nights(orgs, run_one, as_of=as_of)


def run_night(
    settings: Settings, samples: bool, as_of: str | None, data_dir: str | None, mode: str | None
) -> State[Any]:
    """The parent `nightly` run: every organization's night (see the module docstring), with
    the settings the flow built (`steps._settings(data_dir)`)."""
    from fundpipe.app.embedded import every_org
    from fundpipe.app.samples import copy_samples
    from fundpipe.orgs import org_settings

    logger = get_run_logger()
    mode = mode or settings.orchestration.fan_out
    if mode not in {"subflows", "deployments"}:
        from fundpipe.errors import InputError

        raise InputError(f"fan_out {mode!r} must be subflows or deployments")
    with every_org(settings, logger.warning) as (live, orgs):
        several = len(orgs) > 1
        if samples:
            for org in orgs:
                one = org_settings(live, org, among=orgs, load_secret=None).settings
                inbox = one.local.data_dir / "inbox"
                copy_samples(live, inbox=inbox, org_id=org.id, single=not several)
        logger.info("organizations tonight: %s", ", ".join(o.label for o in orgs))
        deadline = _deadline(settings)
        if deadline is not None and _now(deadline) > deadline:  # taken after its alert
            for org in orgs:
                tell_late(
                    oncall.NIGHT_STARTED_LATE, org.folder, org.name or org.folder, deadline, live
                )
        summary = fan_out(
            live,
            orgs,
            as_of=as_of,
            data_dir=data_dir,
            base_url=live.service.base_url if settings.service.embedded else None,
            mode=mode,
        )
    state = _the_night_told(settings, summary)
    if deadline is not None and _now(deadline) > deadline:
        _completed_late(summary, deadline, settings)
    return state


def _deadline(settings: Settings) -> datetime | None:
    """The deadline of this nightly run (`deadline.deadline_after` its scheduled time), None
    when it cannot be read (a bad FUNDPIPE_COMPLETE_BY is the night check's to say)."""
    from prefect.runtime import flow_run

    from fundpipe.app.prefect.deadline import deadline_after

    scheduled = flow_run.scheduled_start_time
    try:
        return deadline_after(
            scheduled, settings.orchestration.complete_by, settings.orchestration.nightly_timezone
        )
    except (ValueError, TypeError, AttributeError):
        return None


def _now(deadline: datetime) -> datetime:
    return datetime.now(deadline.tzinfo)


def _completed_late(summary: Nights, deadline: datetime, settings: Settings) -> None:
    """Each organization whose night ended past the deadline, and did not fail (a failed one
    has its alert): `fundpipe.night.completed-late`, with its verdict."""
    from fundpipe.app.prefect.verdict_state import line_of
    from fundpipe.vocabulary import Verdict

    for line in (line_of(row) for row in summary.rows):
        if line.verdict is Verdict.FAILED:
            continue
        verdict = line.sentence().removeprefix(f"{line.name}: ")
        tell_late(
            oncall.NIGHT_COMPLETED_LATE, line.organization, line.name, deadline, settings, verdict
        )


def _the_night_told(settings: Settings, summary: Nights) -> State[Any]:
    """The parent's end: the verdict (its first artifact), the health page, one
    `fundpipe.night.failed` alert per organization whose night failed, the morning view, the
    numbers; and its state, not green when a night needs a person (`night_state`)."""
    from fundpipe.app.prefect.links import openable
    from fundpipe.app.prefect.sharing import morning
    from fundpipe.app.prefect.tell import tell_night_failed
    from fundpipe.app.prefect.uiview import needs_a_person, night_date, open_exceptions_table
    from fundpipe.app.prefect.verdict_state import (
        line_of,
        night_state,
        publish_health,
        publish_verdict,
    )
    from fundpipe.vocabulary import Verdict

    logger = get_run_logger()
    # the night's date, one for its run's name and its artifacts: the report date
    day = date.fromisoformat(night_date(summary.as_of, settings.pipeline.reporting_timezone))
    lines = [line_of(row) for row in summary.rows]
    reports = {
        row.organization: openable(
            row.report_folder, settings.local.reports_url, settings.local.reports_public_url
        )
        for row in summary.rows
    }
    publish_verdict(lines, day, {org: url for org, url in reports.items() if url})
    publish_health(lines, day)
    for line in lines:
        if line.verdict is Verdict.FAILED:
            tell_night_failed(
                line.organization, line.name, line.why, line.host, line.next_step, settings
            )
    summary = replace(summary, morning=morning(settings, summary))
    create_markdown_artifact(
        markdown=cross_markdown(summary),
        key="fundpipe-organizations",
        description="fundpipe: every organization's night, in numbers",
    )
    open_exceptions_table(summary.rows)
    logger.info("nightly: %s", summary.totals.line())
    for sentence in needs_a_person(summary.rows):
        logger.warning("needs a person: %s", sentence)
    # the flow's result is the typed summary (`summary_of_run`; `as_json` for `--json`); a
    # Failed state's data is an exception (Prefect raises it when it reads the result; a worker
    # does, and `_NoTracebackForPlainFailures` keeps that plain): it carries the summary
    state = night_state(lines, data=summary)
    if summary.failed:
        state.data = NightsFailed(state.message or "", summary)
    return state  # type: ignore[no-any-return]

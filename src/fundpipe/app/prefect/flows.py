"""Prefect flows for fundpipe: thin orchestration over `fundpipe` (the logic lives in src/).

Flows: `nightly` (ingest the inbox → sync → reconcile), and `ingest_file`, `sync`, `reconcile`,
`inbox` as flows of their own. One task per step (a drop of files is ingested together: see `ingest_drop`), never per
row. No task retries:
the service client already retries what is safe to retry (one retry layer only). Parameters
carry no secrets (credentials come from the environment / `.env`, or a Prefect Secret block
named by `FUNDPIPE_CLIENT_SECRET_BLOCK`) and no result is persisted.

`serve_all()` serves the `nightly` (cron, explicit timezone), `inbox` (every few minutes, and
at once when `fundpipe watch` announces a settled file), `org-night` and `night-check` (at the
`FUNDPIPE_COMPLETE_BY` deadline) deployments in this process, and pauses none of them when it
stops (`pauses`); `prefect.yaml` declares the same for a Prefect server + work pool.

Each step's outcome is told on the run logger at INFO and as Prefect events (one line per file,
per step, per exception, and where the reports are; `fundpipe.file.rejected`,
`fundpipe.exception.opened`, `fundpipe.night.completed`): see `fundpipe.app.prefect.tell`. The automations
`fundpipe alerts install` creates react to those events and to a run ending Failed or Crashed.

Every flow ends in a state whose message is fundpipe's plain sentence, never a traceback:

| fundpipe exit code | flow run state |
|---|---|
| 0 success | Completed |
| 1 a file rejected or a distribution needs a person; `nightly`, `org-night`: a night whose verdict is NEEDS A PERSON | Failed, named Needs a person (`verdict_state.needing_a_person`, one form for every flow) |
| 2 usage or configuration error, 3 the service failed or refused us | Failed |
| 5 internal error (a bug; its traceback is in the run's log) | Failed |
| 4 another fundpipe run holds the inbox or the warehouse (this run did nothing) | Cancelled |
| 130 interrupted (Ctrl-C) | Cancelled |

An exception nobody expected, in any step, child or parent, is exit 5 "internal error" (never
3, the service's): the run's log holds its traceback (`steps.state_for` maps code → state).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

from prefect import State, flow, get_run_logger
from prefect.states import Cancelled, Completed, Failed

from fundpipe.app.prefect.deadline import night_check
from fundpipe.app.prefect.fanout import org_night
from fundpipe.app.prefect.steps import (
    _finished,
    _guard,
    _outcome,
    _sentence,
    _settings,
    ingest_drop,
    ingest_one,
    reconcile_step,
    sync_step,
)
from fundpipe.app.prefect.tell import TELLING_OF
from fundpipe.app.prefect.uiview import called, org_tags
from fundpipe.config import Settings
from fundpipe.errors import ExitCode

__all__ = [
    "deployments",
    "inbox",
    "ingest_file",
    "night_check",
    "nightly",
    "org_night",
    "reconcile",
    "serve_all",
    "sync",
]

# --- flows --------------------------------------------------------------------------------------


@flow(name="ingest_file", log_prints=True)
def ingest_file(path: str, data_dir: str | None = None, org: str | None = None) -> State[Any]:
    """Ingest one sheet (validate → plan → submit exactly once) for the organization `org`
    (needed only when several are configured)."""
    return _guard(_ingest_flow, data_dir, path, org)


@flow(name="sync")
def sync(data_dir: str | None = None, org: str | None = None) -> State[Any]:
    """Pull vehicles, balances, distributions, payments, entities and contacts into DuckDB."""
    return _guard(_sync_flow, data_dir, org)


@flow(name="reconcile")
def reconcile(
    as_of: str | None = None, data_dir: str | None = None, org: str | None = None
) -> State[Any]:
    """Write the reconciliation reports for `as_of` (default today) from the warehouse."""
    return _guard(_reconcile_flow, data_dir, as_of, org)


@flow(name="inbox")
def inbox(data_dir: str | None = None, org: str | None = None) -> State[Any]:
    """Ingest whatever complete files wait in the inbox (every few minutes, and at once when
    `fundpipe watch` announces a settled file): `org`'s, else every organization's in turn."""
    return _guard(_inbox_flow, data_dir, org)


@flow(name="nightly")
def nightly(
    samples: bool = False,
    as_of: str | None = None,
    data_dir: str | None = None,
    fan_out: str | None = None,
) -> State[Any]:
    """The nightly job, for every organization: one `org-night` child run each (ingest every
    ready inbox file, sync the service, reconcile, report), as subflows or deployment runs
    (`fan_out`: "subflows" or "deployments"; default FUNDPIPE_FAN_OUT). See
    `fundpipe.app.prefect.fanout`."""
    from fundpipe.app.prefect.fanout import run_night

    built: list[Settings] = []

    def night() -> State[Any]:
        built.append(_settings(data_dir))
        return run_night(built[0], samples, as_of, data_dir, fan_out)

    final = _guard(night)
    # settings that cannot be read: the message says so, no secret to hide
    _tell_if_no_night_ran(final, built[0] if built else Settings.model_construct())
    return final


def _tell_if_no_night_ran(final: State[Any], settings: Settings) -> None:
    """A nightly run that failed before any organization's night (its configuration, the
    org-night deployment missing, a bug): one `fundpipe.night.failed` alert for every
    organization (the Failed run itself is not alerted: `alerts.NIGHTS_TOLD_BY_EVENT`)."""
    from fundpipe.app.prefect.tell import tell_night_failed
    from fundpipe.app.prefect.verdict_state import needs_a_person_state, next_step_for
    from fundpipe.errors import FundpipeError
    from fundpipe.nights import NightsFailed

    if not final.is_failed() or needs_a_person_state(final):
        return
    error = final.data
    if isinstance(error, NightsFailed):  # each organization's failure was told already
        return
    code = int(error.exit_code if isinstance(error, FundpipeError) else ExitCode.INTERNAL)
    why = final.message or "the nightly run failed"
    host = (
        urlsplit(settings.service.base_url or "").hostname
        if not settings.service.embedded
        else None
    )
    for org, name in _known_organizations(settings):
        tell_night_failed(org, name, why, host, next_step_for(code, host or ""), settings)


def _known_organizations(settings: Settings) -> list[tuple[str, str]]:
    """The organizations a night was for, known without the service: (id, name) of the
    configured ones, else FUNDPIPE_ORG_ID's, else "every organization"."""
    from fundpipe.orgs import configured_organizations

    try:
        configured = configured_organizations(settings) or []
    except Exception:  # a list that cannot be read is what failed: the message says so
        configured = []
    if configured:
        return [(o.folder, o.name or o.folder) for o in configured]
    if settings.service.org_id:
        return [(settings.service.org_id, settings.service.org_id)]
    return [("all", "every organization")]


def _ingest_flow(data_dir: str | None, path: str | None, org: str | None) -> State[Any]:
    from fundpipe.app.embedded import one_org

    with one_org(_settings(data_dir), org, get_run_logger().warning) as settings:
        return _ingest_for(settings, path)


def _ingest_for(settings: Settings, path: str | None, org: str = "") -> State[Any]:
    """Ingest `path`, or the inbox's drop; `org` (a run over several organizations) names the
    organization in the task's name."""
    from fundpipe.app.outcomes import ingest_dict
    from fundpipe.app.prefect.tell import tell_ingest

    drop = ingest_drop.with_options(name=f"ingest-inbox {org}") if org else ingest_drop
    step = (
        ingest_one(settings, path, return_state=True) if path else drop(settings, return_state=True)
    )
    result, stopped = _outcome(step)
    if stopped is not None:
        return stopped
    tell_ingest(result, settings)
    # the flow's result is the JSON of `fundpipe ingest --json`
    return _finished(
        ExitCode(result.exit_code), _sentence("ingest", result.files), ingest_dict(result)
    )


def _inbox_flow(data_dir: str | None, org: str | None) -> State[Any]:
    """One organization's inbox, or every organization's in turn (one's failure stops none)."""
    from fundpipe.app.embedded import every_org
    from fundpipe.app.prefect.secrets import with_secret_block
    from fundpipe.orgs import org_settings, pick_org

    top = _settings(data_dir)
    with every_org(top, get_run_logger().warning) as (live, orgs):
        chosen = [pick_org(orgs, org or top.service.org_id)] if org or top.service.org_id else orgs
        several = len(chosen) > 1
        if several:
            _tag_this_run([tag for o in chosen for tag in org_tags(o.folder, o.name)])
        states = []
        for one in chosen:
            # a run over several organizations: each task and line names its organization
            who = called(one.folder, one.name)
            told = TELLING_OF.set(who if several else None)
            try:
                states.append(
                    _guard(
                        lambda o=one: _ingest_for(
                            org_settings(
                                live, o, among=orgs, load_secret=with_secret_block
                            ).settings,
                            None,
                            called(o.folder, o.name) if several else "",
                        )
                    )
                )
            finally:
                TELLING_OF.reset(told)
    if len(states) == 1:
        return states[0]
    from fundpipe.app.prefect.verdict_state import needs_a_person_state

    worst = next((st for st in states if not (st.is_completed() or needs_a_person_state(st))), None)
    message = "; ".join(
        f"{called(o.folder, o.name)}: {st.message}" for o, st in zip(chosen, states, strict=True)
    )
    if worst is None:
        # every inbox was clean (0) or left a file for a person (1): so is the run over them all
        code = ExitCode.NEEDS_PERSON if any(needs_a_person_state(st) for st in states) else 0
        return _finished(ExitCode(code), message, {"exit_code": int(code)})
    final = Cancelled if worst.is_cancelled() else Failed
    return final(message=message, data=worst.data)


def _tag_this_run(tags: list[str]) -> None:
    """Add ``tags`` (each organization's) to the current flow run, so that a run over several
    organizations is found by each one's tag; a server that refuses leaves the run untagged."""
    from prefect.client.orchestration import get_client
    from prefect.runtime import flow_run

    run_id = flow_run.id
    if not run_id:
        return
    try:
        with get_client(sync_client=True) as client:
            run = client.read_flow_run(UUID(run_id))
            client.update_flow_run(run.id, tags=sorted({*run.tags, *tags}))
    except Exception as exc:  # the tags help a person filter runs; the inbox matters more
        get_run_logger().warning("could not tag this run with its organizations: %s", exc)


def _sync_flow(data_dir: str | None, org: str | None) -> State[Any]:
    from fundpipe.app.embedded import one_org
    from fundpipe.app.outcomes import sync_dict
    from fundpipe.app.prefect.tell import tell_sync

    with one_org(_settings(data_dir), org, get_run_logger().warning) as settings:
        result, stopped = _outcome(sync_step(settings, return_state=True))
    if stopped is not None:
        return stopped
    tell_sync(result, settings)
    return Completed(message=f"sync: {result.counts}", data=sync_dict(result))


def _reconcile_flow(data_dir: str | None, as_of: str | None, org: str | None) -> State[Any]:
    from fundpipe.app.outcomes import reconcile_dict
    from fundpipe.app.prefect.tell import tell_reconcile
    from fundpipe.night import exceptions_of
    from fundpipe.orgs import Among, org_settings

    # reconcile reads only the warehouse: the organization is found without the service
    top = _settings(data_dir)
    settings = org_settings(
        top,
        org or top.service.org_id,
        among=Among.LOCAL,
        load_secret=None,
        say=get_run_logger().warning,
    ).settings
    result, stopped = _outcome(reconcile_step(settings, as_of, return_state=True))
    if stopped is not None:
        return stopped
    tell_reconcile(result, exceptions_of(result), settings)
    # a reconciliation that wrote its reports completed: its exceptions are in them
    sentence = _sentence("reconcile", (), result.summary.exceptions)
    return _finished(ExitCode.OK, sentence, reconcile_dict(result))


def deployments(settings: Settings | None = None) -> list[Any]:
    """The `nightly` (cron, explicit timezone), `inbox` (interval, and a trigger on the
    watcher's file-settled event), `org-night` (unscheduled: the nightly fan-out's
    per-organization run) and `night-check` (daily at the deadline) deployments;
    `prefect.yaml` declares the same for a Prefect server with a work pool.

    The schedules come from `settings` (default: from the environment): `nightly_cron`,
    `nightly_timezone`, `inbox_interval_s`, `complete_by`.
    """
    settings = settings or _settings(None)
    cron, zone = settings.orchestration.nightly_cron, settings.orchestration.nightly_timezone
    interval_s = settings.orchestration.inbox_interval_s
    from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy
    from prefect.events import DeploymentEventTrigger
    from prefect.schedules import Cron, Interval

    from fundpipe.app.prefect.deadline import CHECK_FLOW
    from fundpipe.app.prefect.fanout import ORG_FLOW
    from fundpipe.app.prefect.watch import INBOX_EVENT, INBOX_RESOURCE

    # A nightly run that would overlap the previous one is not started; an inbox run waits for
    # the one before it, so a file announced while a run is under way is picked up right after.
    one_at_a_time = ConcurrencyLimitConfig(
        limit=1, collision_strategy=ConcurrencyLimitStrategy.CANCEL_NEW
    )
    one_after_another = ConcurrencyLimitConfig(
        limit=1, collision_strategy=ConcurrencyLimitStrategy.ENQUEUE
    )
    return [
        nightly.to_deployment(
            name="nightly",
            schedules=[Cron(cron, timezone=zone)],
            concurrency_limit=one_at_a_time,
            description=f"Nightly at {cron} ({zone})",
        ),
        inbox.to_deployment(
            name="inbox",
            schedules=[Interval(interval_s, timezone=zone)],
            triggers=[
                DeploymentEventTrigger(
                    name="fundpipe inbox: a file settled",
                    expect={INBOX_EVENT},
                    match={"prefect.resource.id": INBOX_RESOURCE},
                )
            ],
            concurrency_limit=one_after_another,
            description=f"Ingest complete inbox files when one settles (fundpipe watch), and "
            f"every {interval_s} s as a safety net",
        ),
        # no schedule: the nightly run starts one per organization (FUNDPIPE_FAN_OUT=deployments)
        org_night.to_deployment(
            name=ORG_FLOW,
            description="One organization's night (started by the nightly run, one per "
            "organization, on any worker of the pool)",
        ),
        # at the deadline (FUNDPIPE_COMPLETE_BY): which organizations have no completed night;
        # no concurrency limit, so a stuck earlier check never keeps the next one from alerting
        night_check.to_deployment(
            name=CHECK_FLOW,
            schedules=[Cron(settings.orchestration.night_check_cron, timezone=zone)],
            description=f"At {settings.orchestration.complete_by} ({zone}): which organizations have no "
            "completed night (fundpipe.night.missed)",
        ),
    ]


def serve_all(say: Callable[[str], object] = print) -> None:
    """Serve the `nightly`, `inbox`, `org-night` and `night-check` deployments from this process until
    interrupted, with the inbox watcher announcing settled files (every organization's inbox)
    in a thread beside them.

    Nothing is paused when serving stops (the server goes on scheduling the nights; with nobody
    serving, they go Late and the missed-night alert fires). A deployment found paused is told
    through ``say``, one line each, and stays paused — unless an older `fundpipe serve` paused
    it as it stopped, which is resumed (`fundpipe.app.prefect.pauses`).

    Needs a Prefect server with its scheduler (`PREFECT_API_URL`); `fundpipe serve` starts one
    on loopback when none is configured.
    """
    import threading

    from prefect import serve

    from fundpipe.app.prefect.pauses import keep_pauses
    from fundpipe.app.prefect.watch import (
        inbox_finder,
        prefect_announcer,
        watch_buckets,
        watch_inboxes,
    )

    settings = _settings(None)
    served = keep_pauses(deployments(settings), say)
    # a configuration no night can run with is refused here, not in the watcher's thread
    find = inbox_finder(settings)
    stop = threading.Event()
    watcher = threading.Thread(
        target=watch_inboxes,
        args=(find, settings.local.data_dir, prefect_announcer(settings.local.data_dir)),
        kwargs={"settle_s": settings.pipeline.inbox_settle_s, "stop": stop},
        name="fundpipe-inbox-watch",
        daemon=True,
    )
    watcher.start()
    bucket_watcher = threading.Thread(  # FUNDPIPE_INBOX_URL: listed every FUNDPIPE_INBOX_POLL_S
        target=watch_buckets,
        args=(settings, prefect_announcer(settings.local.data_dir)),
        kwargs={"stop": stop},
        name="fundpipe-bucket-watch",
        daemon=True,
    )
    bucket_watcher.start()
    try:
        serve(*served, pause_on_shutdown=False)
    finally:
        stop.set()

"""Prefect flows for fundpipe: thin orchestration over `fundpipe` (the logic lives in src/).

Flows: `nightly` (ingest the inbox → sync → reconcile), and `ingest_file`, `sync`, `reconcile`,
`inbox` as flows of their own. One task per step (a drop of files is ingested together: see `ingest_drop`), never per
row. No task retries:
the service client already retries what is safe to retry (one retry layer only). Parameters
carry no secrets (credentials come from the environment / `.env`, or a Prefect Secret block
named by `FUNDPIPE_CLIENT_SECRET_BLOCK`) and no result is persisted.

`serve_all()` serves the `nightly` (cron, explicit timezone) and `inbox` (every few minutes, and
at once when `fundpipe watch` announces a settled file) deployments in this process;
`prefect.yaml` declares the same for a Prefect server + work pool.

Each step's outcome is told on the run logger at INFO and as Prefect events (one line per file,
per step, per exception, and where the reports are; `fundpipe.file.rejected`,
`fundpipe.exception.opened`, `fundpipe.night.completed`): see `fundpipe.app.tell`. The automations
`fundpipe alerts install` creates react to those events and to a run ending Failed or Crashed.

Every flow ends in a state whose message is fundpipe's plain sentence, never a traceback:

| fundpipe exit code | flow run state |
|---|---|
| 0 success, 1 a file rejected or a distribution needs a person | Completed |
| 2 usage or configuration error, 3 the service failed or refused us | Failed |
| 4 another fundpipe run holds the inbox or the warehouse (this run did nothing) | Cancelled |
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any, TypeVar

from prefect import State, flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.states import Cancelled, Completed, Failed

from fundpipe.app.embedded import service
from fundpipe.app.samples import copy_samples
from fundpipe.config import Settings

#: How long a flow's ingest waits for another run holding the inbox lock before it is Cancelled.
FLOW_LOCK_WAIT_S = 300.0

_R = TypeVar("_R")

_TASK_OPTIONS: dict[str, Any] = {"cache_policy": NO_CACHE, "persist_result": False}

#: fundpipe exit code → the type of the flow run's final state (see the module docstring).
_STATE_FOR_EXIT = {0: Completed, 1: Completed, 2: Failed, 3: Failed, 4: Cancelled}


class _NoTracebackForPlainFailures(logging.Filter):
    """Drop Prefect's "Engine execution exited with unexpected exception" record (and its
    traceback) when the exception is fundpipe's own plain error.

    Under a worker, Prefect reads a failed run's result, which raises the error in the state's
    data, and logs it with its traceback to the run's log; the run has already logged the plain
    sentence and ends in a state that carries it, so the traceback is noise for the on-call.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        from fundpipe.errors import FundpipeError

        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, FundpipeError)


# the logger Prefect's engine reports a flow run's end on (`flow_run_logger`)
logging.getLogger("prefect.flow_runs").addFilter(_NoTracebackForPlainFailures())


def _refusal(exc: BaseException) -> State[Any]:
    """The state a step ends in when it raises: fundpipe's one-line, redacted message."""
    from fundpipe.errors import LockHeld, as_fundpipe_error

    error = as_fundpipe_error(exc)
    code, message = int(error.exit_code), str(error)
    if isinstance(error, LockHeld):
        message = f"{message}; this run did nothing"
    # the traceback is for a developer with debug logging on, never the run's INFO log
    logger = get_run_logger()
    logger.debug("step failed", exc_info=exc)
    logger.error(message)
    # the error is the state's data: Prefect raises it when it reads a failed run's result (a
    # worker does), and `summary_of_run` reads its exit code
    return _STATE_FOR_EXIT.get(code, Failed)(message=message, data=error)


def _guard(work: Callable[..., _R], *args: Any) -> _R | State[Any]:
    """Run one step's work; an expected failure becomes a plain Failed/Cancelled state."""
    try:
        return work(*args)
    except Exception as exc:  # every failure becomes a sentence in the run's state
        return _refusal(exc)


def _finished(summary: dict[str, Any], what: str) -> State[Any]:
    """The final state of a flow whose steps all ran: Completed, with the night in one line."""
    code = int(summary.get("exit_code", 0))
    return _STATE_FOR_EXIT.get(code, Failed)(message=_sentence(summary, what), data=summary)


def _sentence(summary: dict[str, Any], what: str) -> str:
    """One plain line for the state message: files, distributions, and what needs a person."""
    files = summary.get("files", [])
    states: dict[str, int] = {}
    for item in files:
        states[item["state"]] = states.get(item["state"], 0) + 1
    parts = [f"{len(files)} file(s) seen"] if files or what != "reconcile" else []
    parts += [f"{n} {state}" for state, n in sorted(states.items())]
    created = sum(f.get("distributions", 0) for f in files if f["state"] == "processed")
    if created:
        parts.append(f"{created} distribution(s) submitted")
    if "exceptions" in summary:
        parts.append(f"{summary['exceptions']} exception(s) to review")
    rejected = [f for f in files if f["state"] in {"rejected", "conflict", "refused"}]
    needs = "; ".join(
        f"{Path(f['file']).name} {f['state']}: {f.get('message') or 'see its error report'}"
        for f in rejected[:3]
    )
    line = f"{what}: " + (", ".join(parts) or "nothing to do")
    return f"{line} — needs a person: {needs}" if needs else line


def _outcome(step: State[Any]) -> tuple[Any, State[Any] | None]:
    """A step's result, or the state the flow must end in because the step did not complete."""
    if step.is_completed():
        return step.result(), None
    # a new state for the flow, with the step's sentence (returning the task's own state would
    # make Prefect summarise it as "1/1 states failed")
    from fundpipe.errors import as_fundpipe_error

    data = step.result(raise_on_failure=False)
    if not isinstance(data, BaseException):
        data = as_fundpipe_error(RuntimeError(step.message or step.name))
    final = Cancelled if step.is_cancelled() else Failed
    return None, final(message=step.message, data=data)


def _settings(data_dir: str | None) -> Settings:
    """Settings from the environment; the secret from a Prefect Secret block when one is named
    (`FUNDPIPE_CLIENT_SECRET_BLOCK`) and no `FUNDPIPE_CLIENT_SECRET` is set. Every flow starts
    here, so this is also where the process picks Arrow's allocator (`use_system_allocator`)."""
    import asyncio

    from fundpipe.client import with_prefect_secret
    from fundpipe.sheets.frames import use_system_allocator

    use_system_allocator()

    settings = Settings()
    if "inbox_lock_wait_s" not in settings.model_fields_set:
        # a nightly run and an inbox run may start together: wait for the other, don't give up
        settings = settings.model_copy(update={"inbox_lock_wait_s": FLOW_LOCK_WAIT_S})
    if data_dir:
        settings = settings.model_copy(update={"data_dir": Path(data_dir)})
    if settings.client_secret is None and settings.client_secret_block:
        settings = asyncio.run(with_prefect_secret(settings))
    return settings


# --- tasks: one per file and per step --------------------------------------------------------


@task(name="ingest-inbox", **_TASK_OPTIONS)
def ingest_drop(settings: Settings) -> dict[str, Any] | State[Any]:
    """Ingest every complete file waiting in the inbox as one drop.

    One task for the drop, not one per file: a distribution sheet may name entities by the
    `external_reference` of a roster dropped with it, so the files of a drop are validated and
    planned together. The per-file outcomes are in the result (and the run's artifacts).
    """
    from fundpipe.app.outcomes import ingest_dict
    from fundpipe.submit.ingest import ingest

    return _guard(lambda: ingest_dict(ingest(settings, None)))


@task(name="ingest-file", **_TASK_OPTIONS)
def ingest_one(settings: Settings, path: str) -> dict[str, Any] | State[Any]:
    """Validate, plan and submit one sheet exactly once; returns the ingest summary."""
    from fundpipe.app.outcomes import ingest_dict
    from fundpipe.submit.ingest import ingest

    return _guard(lambda: ingest_dict(ingest(settings, [Path(path)])))


@task(name="sync", **_TASK_OPTIONS)
def sync_step(settings: Settings) -> dict[str, Any] | State[Any]:
    """Pull the service's state into the warehouse."""
    from fundpipe.app.outcomes import sync_dict
    from fundpipe.sync.pull import sync as run_sync

    return _guard(lambda: sync_dict(run_sync(settings)))


@task(name="reconcile", **_TASK_OPTIONS)
def reconcile_step(settings: Settings, as_of: str | None) -> dict[str, Any] | State[Any]:
    """Build the reconciliation views and write the reports."""
    from fundpipe.app.outcomes import reconcile_dict
    from fundpipe.reconcile.views import reconcile as run_reconcile

    report_date = date.fromisoformat(as_of) if as_of else None
    return _guard(lambda: reconcile_dict(run_reconcile(settings, as_of=report_date, out_dir=None)))


@task(name="publish-artifacts", **_TASK_OPTIONS)
def publish(summary: dict[str, Any], exceptions: list[dict[str, Any]], settings: Settings) -> None:
    """The night's artifacts: a markdown summary linking the reports, a link to the published
    workbook (with `FUNDPIPE_REPORTS_URL`), a table of each rejected file's errors, and the
    exceptions table."""
    from fundpipe.app.artifacts import publish_artifacts

    publish_artifacts(summary, exceptions, settings)


# --- flows --------------------------------------------------------------------------------------


@flow(name="ingest_file", log_prints=True)
def ingest_file(path: str, data_dir: str | None = None) -> State[Any]:
    """Ingest one sheet (validate → plan → submit exactly once)."""
    return _guard(_ingest_flow, data_dir, path)


@flow(name="sync")
def sync(data_dir: str | None = None) -> State[Any]:
    """Pull vehicles, balances, distributions, payments, entities and contacts into DuckDB."""
    return _guard(_sync_flow, data_dir)


@flow(name="reconcile")
def reconcile(as_of: str | None = None, data_dir: str | None = None) -> State[Any]:
    """Write the reconciliation reports for `as_of` (default today) from the warehouse."""
    return _guard(_reconcile_flow, data_dir, as_of)


@flow(name="inbox")
def inbox(data_dir: str | None = None) -> State[Any]:
    """Ingest whatever complete files wait in the inbox (every few minutes, and at once when
    `fundpipe watch` announces a settled file)."""
    return _guard(_ingest_flow, data_dir, None)


@flow(name="nightly")
def nightly(
    samples: bool = False, as_of: str | None = None, data_dir: str | None = None
) -> State[Any]:
    """The nightly job: ingest every ready inbox file, sync the service, reconcile, report."""
    return _guard(_nightly_flow, samples, as_of, data_dir)


def _ingest_flow(data_dir: str | None, path: str | None) -> State[Any]:
    from fundpipe.app.tell import tell_ingest

    settings = _settings(data_dir)
    with service(settings) as live:
        step = (
            ingest_one(live, path, return_state=True)
            if path
            else ingest_drop(live, return_state=True)
        )
    ingested, stopped = _outcome(step)
    if stopped is not None:
        return stopped
    tell_ingest(ingested, settings)
    return _finished(ingested, "ingest")


def _sync_flow(data_dir: str | None) -> State[Any]:
    from fundpipe.app.tell import tell_sync

    settings = _settings(data_dir)
    with service(settings) as live:
        synced, stopped = _outcome(sync_step(live, return_state=True))
    if stopped is not None:
        return stopped
    tell_sync(synced, settings)
    return Completed(message=f"sync: {synced.get('counts', {})}", data=synced)


def _reconcile_flow(data_dir: str | None, as_of: str | None) -> State[Any]:
    from fundpipe.app.tell import tell_reconcile

    settings = _settings(data_dir)
    reconciled, stopped = _outcome(reconcile_step(settings, as_of, return_state=True))
    if stopped is not None:
        return stopped
    tell_reconcile(reconciled, settings)
    return _finished(reconciled, "reconcile")


def _nightly_flow(samples: bool, as_of: str | None, data_dir: str | None) -> State[Any]:
    from fundpipe.app.outcomes import build_summary
    from fundpipe.app.tell import tell_ingest, tell_night, tell_reconcile, tell_sync

    settings = _settings(data_dir)
    if samples:
        copy_samples(settings)
    with service(settings) as live:
        ingested, stopped = _outcome(ingest_drop(live, return_state=True))
        if stopped is not None:
            return stopped
        tell_ingest(ingested, settings)
        synced, stopped = _outcome(sync_step(live, return_state=True))
        if stopped is not None:
            return stopped
        tell_sync(synced, settings)
    reconciled, stopped = _outcome(reconcile_step(settings, as_of, return_state=True))
    if stopped is not None:
        return stopped
    exceptions = tell_reconcile(reconciled, settings)
    summary = build_summary([ingested], synced, reconciled)
    publish(summary, exceptions, settings)
    final = _finished(summary, "nightly")
    tell_night(summary, exceptions, settings, final.message or "")
    return final


def deployments(settings: Settings | None = None) -> list[Any]:
    """The `nightly` (cron, explicit timezone) and `inbox` (interval, and a trigger on the
    watcher's file-settled event) deployments; `prefect.yaml` declares the same for a Prefect
    server with a work pool.

    The schedules come from `settings` (default: from the environment): `nightly_cron`,
    `nightly_timezone`, `inbox_interval_s`.
    """
    settings = settings or Settings()
    cron, zone = settings.nightly_cron, settings.nightly_timezone
    interval_s = settings.inbox_interval_s
    from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy
    from prefect.events import DeploymentEventTrigger
    from prefect.schedules import Cron, Interval

    from fundpipe.app.watch import INBOX_EVENT, INBOX_RESOURCE

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
    ]


def serve_all() -> None:
    """Serve the `nightly` and `inbox` deployments from this process until interrupted, with
    the inbox watcher announcing settled files in a thread beside them.

    Needs a Prefect server with its scheduler (`PREFECT_API_URL`); `fundpipe serve` starts one
    on loopback when none is configured.
    """
    import threading

    from prefect import serve

    from fundpipe.app.watch import prefect_announcer, watch_inbox
    from fundpipe.submit.inbox import InboxDirs

    settings = _settings(None)
    stop = threading.Event()
    watcher = threading.Thread(
        target=watch_inbox,
        args=(InboxDirs(settings.data_dir).inbox, prefect_announcer(settings.data_dir)),
        kwargs={"settle_s": settings.inbox_settle_s, "stop": stop},
        name="fundpipe-inbox-watch",
        daemon=True,
    )
    watcher.start()
    try:
        serve(*deployments())
    finally:
        stop.set()

"""Prefect flows for fundpipe: thin orchestration over `fundpipe` (the logic lives in src/).

Flows: `nightly` (ingest the inbox → sync → reconcile), and `ingest_file`, `sync`, `reconcile`,
`inbox` as flows of their own. One task per step (a drop of files is ingested together: see `ingest_drop`), never per
row. No task retries:
the service client already retries what is safe to retry (one retry layer only). Parameters
carry no secrets (credentials come from the environment / `.env`, or a Prefect Secret block
named by `FUNDPIPE_CLIENT_SECRET_BLOCK`) and no result is persisted.

`serve_all()` serves the `nightly` (cron, explicit timezone) and `inbox` (every few minutes)
deployments in this process; `prefect.yaml` declares the same for a Prefect server + work pool.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from fundpipe.app.embedded import service
from fundpipe.app.samples import copy_samples
from fundpipe.config import Settings

_TASK_OPTIONS: dict[str, Any] = {"cache_policy": NO_CACHE, "persist_result": False}


def _settings(data_dir: str | None) -> Settings:
    """Settings from the environment; the secret from a Prefect Secret block when one is named
    (`FUNDPIPE_CLIENT_SECRET_BLOCK`) and no `FUNDPIPE_CLIENT_SECRET` is set."""
    import asyncio

    from fundpipe.client import with_prefect_secret

    settings = Settings()
    if data_dir:
        settings = settings.model_copy(update={"data_dir": Path(data_dir)})
    if settings.client_secret is None and settings.client_secret_block:
        settings = asyncio.run(with_prefect_secret(settings))
    return settings


# --- tasks: one per file and per step --------------------------------------------------------


@task(name="ingest-inbox", **_TASK_OPTIONS)
def ingest_drop(settings: Settings) -> dict[str, Any]:
    """Ingest every complete file waiting in the inbox as one drop.

    One task for the drop, not one per file: a distribution sheet may name entities by the
    `external_reference` of a roster dropped with it, so the files of a drop are validated and
    planned together. The per-file outcomes are in the result (and the run's artifacts).
    """
    from fundpipe.app.outcomes import ingest_dict
    from fundpipe.submit.ingest import ingest

    return ingest_dict(ingest(settings, None))


@task(name="ingest-file", **_TASK_OPTIONS)
def ingest_one(settings: Settings, path: str) -> dict[str, Any]:
    """Validate, plan and submit one sheet exactly once; returns the ingest summary."""
    from fundpipe.app.outcomes import ingest_dict
    from fundpipe.submit.ingest import ingest

    return ingest_dict(ingest(settings, [Path(path)]))


@task(name="sync", **_TASK_OPTIONS)
def sync_step(settings: Settings) -> dict[str, Any]:
    """Pull the service's state into the warehouse."""
    from fundpipe.app.outcomes import sync_dict
    from fundpipe.sync.pull import sync as run_sync

    return sync_dict(run_sync(settings))


@task(name="reconcile", **_TASK_OPTIONS)
def reconcile_step(settings: Settings, as_of: str | None) -> dict[str, Any]:
    """Build the reconciliation views and write the reports."""
    from fundpipe.app.outcomes import reconcile_dict
    from fundpipe.reconcile.views import reconcile as run_reconcile

    report_date = date.fromisoformat(as_of) if as_of else None
    return reconcile_dict(run_reconcile(settings, as_of=report_date, out_dir=None))


@task(name="publish-artifacts", **_TASK_OPTIONS)
def publish(summary: dict[str, Any], exceptions: list[dict[str, Any]]) -> None:
    """A markdown summary and a table of exceptions, attached to the flow run."""
    from fundpipe.app.outcomes import summary_markdown

    create_markdown_artifact(
        markdown=summary_markdown(summary),
        key="fundpipe-run-summary",
        description="fundpipe nightly run: files, distributions, totals, exceptions",
    )
    create_table_artifact(
        table=exceptions or [{"reason": "no exceptions"}],
        key="fundpipe-exceptions",
        description="Reconciliation exceptions that need a person",
    )


# --- flows --------------------------------------------------------------------------------------


@flow(name="ingest_file", log_prints=True)
def ingest_file(path: str, data_dir: str | None = None) -> dict[str, Any]:
    """Ingest one sheet (validate → plan → submit exactly once)."""
    settings = _settings(data_dir)
    with service(settings) as live:
        return ingest_one(live, path)


@flow(name="sync")
def sync(data_dir: str | None = None) -> dict[str, Any]:
    """Pull vehicles, balances, distributions, payments, entities and contacts into DuckDB."""
    settings = _settings(data_dir)
    with service(settings) as live:
        return sync_step(live)


@flow(name="reconcile")
def reconcile(as_of: str | None = None, data_dir: str | None = None) -> dict[str, Any]:
    """Write the reconciliation reports for `as_of` (default today) from the warehouse."""
    return reconcile_step(_settings(data_dir), as_of)


@flow(name="inbox")
def inbox(data_dir: str | None = None) -> dict[str, Any]:
    """Ingest whatever complete files wait in the inbox (the every-few-minutes deployment)."""
    settings = _settings(data_dir)
    with service(settings) as live:
        return ingest_drop(live)


@flow(name="nightly")
def nightly(
    samples: bool = False, as_of: str | None = None, data_dir: str | None = None
) -> dict[str, Any]:
    """The nightly job: ingest every ready inbox file, sync the service, reconcile, report."""
    from fundpipe.app.outcomes import build_summary

    settings = _settings(data_dir)
    if samples:
        copy_samples(settings)
    with service(settings) as live:
        ingests = [ingest_drop(live)]
        synced = sync_step(live)
    reconciled = reconcile_step(settings, as_of)
    summary = build_summary(ingests, synced, reconciled)
    publish(summary, reconciled.get("exceptions_rows", []))
    return summary


def deployments(settings: Settings | None = None) -> list[Any]:
    """The `nightly` (cron, explicit timezone) and `inbox` (interval) deployments, one run at a
    time each; `prefect.yaml` declares the same for a Prefect server with a work pool.

    The schedules come from `settings` (default: from the environment): `nightly_cron`,
    `nightly_timezone`, `inbox_interval_s`.
    """
    settings = settings or Settings()
    cron, zone = settings.nightly_cron, settings.nightly_timezone
    interval_s = settings.inbox_interval_s
    from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy
    from prefect.schedules import Cron, Interval

    # A run that would overlap the previous one of the same deployment is not started.
    one_at_a_time = ConcurrencyLimitConfig(
        limit=1, collision_strategy=ConcurrencyLimitStrategy.CANCEL_NEW
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
            concurrency_limit=one_at_a_time,
            description=f"Ingest complete inbox files every {interval_s} s",
        ),
    ]


def serve_all() -> None:
    """Serve the `nightly` and `inbox` deployments from this process until interrupted."""
    from prefect import serve

    serve(*deployments())

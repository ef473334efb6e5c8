"""The commands that hand the nights to Prefect: `fundpipe serve` (the deployments, from this
process) and `fundpipe watch` (the inbox's file-arrival events for a worker elsewhere).

Prefect is imported inside each command, so the other commands start without it.
"""

from __future__ import annotations

from functools import partial

from fundpipe.app.cli.common import (
    DataDirOption,
    err_console,
    prefect_defaults,
    settings_for,
    user_errors,
)

__all__ = ["serve_command", "watch_command"]


def serve_command() -> None:
    """Serve the four deployments from this process and watch every organization's inbox:
    `nightly` (cron), `inbox` (on file arrival, and every few minutes), `org-night` (one
    organization's night, started by the nightly run) and `night-check` (at the
    FUNDPIPE_COMPLETE_BY deadline).

    Uses the Prefect server named by PREFECT_API_URL; without one, starts `prefect server
    start` on 127.0.0.1:FUNDPIPE_PREFECT_PORT (4200) and stops it on exit. Stop with Ctrl-C.

    Example: fundpipe serve   (for a trial, FUNDPIPE_NIGHTLY_CRON="* * * * *" runs it every
    minute)
    """
    prefect_defaults()
    with user_errors():
        from fundpipe.app.prefect.server import serve

        # each line whole (a deployment's page, a log's path): never wrapped, never markup
        serve(settings_for(), say=partial(err_console.print, soft_wrap=True, markup=False))


def watch_command(data_dir: DataDirOption = None) -> None:
    """Watch the inbox and start an `inbox` run as soon as a dropped file settles.

    Emits the Prefect event `fundpipe.inbox.file.settled` to the server named by
    PREFECT_API_URL; the `inbox` deployment (flows/prefect.yaml) is triggered by it. Run it on
    the machine whose data directory holds the inbox, beside `prefect worker start`.

    Example: fundpipe watch --data-dir data   (with PREFECT_API_URL=http://127.0.0.1:4200/api)
    """
    prefect_defaults()
    with user_errors(data_dir):
        from fundpipe.app.prefect.watch import watch_and_announce

        watch_and_announce(settings_for(data_dir), say=err_console.print)

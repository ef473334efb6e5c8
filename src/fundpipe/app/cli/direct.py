"""`fundpipe run` on one machine, with no Prefect server: the library night, in this process.

When neither `PREFECT_API_URL` nor `--prefect` nor a Prefect Secret block is in play, the
night over every organization is `fundpipe.nights.nights` running `fundpipe.night.night` for
each, one thread per organization (as the `nightly` flow fans out its `org-night` children),
with the flow's start settings (`fundpipe.app.embedded.night_settings`: the 300 s inbox-lock
wait), the same host slots (`FUNDPIPE_ORG_CONCURRENCY` organizations at once per service host,
each at its share of the host's rate) and the same rows, totals, exit code, reports and
published nights. No temporary Prefect server starts (about 11 s of a small night).

What the flow tells on its run log (one line per file, per step, per exception, where the
reports are, the night in one sentence, what needs a person) goes to the `fundpipe.run` logger,
in the same words (`fundpipe.app.prefect.oncall`); `fundpipe run --verbose` shows it on
standard error. What only a Prefect server keeps (artifacts, events, the alerts they start) is
the flow's: set `PREFECT_API_URL` or pass `--prefect` for it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from fundpipe.app.embedded import limit_name, night_settings, shared_rate
from fundpipe.app.prefect import oncall
from fundpipe.config import Organization, Settings
from fundpipe.nights import Nights, OrgNight, OrgRow, row_of

if TYPE_CHECKING:
    from fundpipe.night import StepRunner

__all__ = ["RUN_LOGGER", "direct_night", "flow_night", "needs_the_flow", "night_here"]

#: The logger the direct night tells its run-log lines on (`--verbose` shows them).
RUN_LOGGER = "fundpipe.run"
log = logging.getLogger(RUN_LOGGER)

_R = TypeVar("_R")


def needs_the_flow(settings: Settings, asked: bool, environ: dict[str, str]) -> bool:
    """Whether `fundpipe run` runs as the Prefect flow: asked (`--prefect`), a Prefect server
    named (`PREFECT_API_URL`, or the active Prefect profile's), a client secret to read from a Prefect Secret block (the
    settings' or a configured organization's), or the children sent to a work pool
    (`FUNDPIPE_FAN_OUT=deployments`). Otherwise the night runs directly."""
    if asked or environ.get("PREFECT_API_URL") or _profile_names_a_server(environ):
        return True
    if settings.orchestration.fan_out == "deployments":
        return True
    if settings.service.client_secret is None and settings.service.client_secret_block:
        return True
    from fundpipe.orgs import configured_organizations

    try:
        configured = configured_organizations(settings) or []
    except Exception:  # a list that cannot be read: the night says so, in either path
        return False
    return any(o.secret_block for o in configured)


def _profile_names_a_server(environ: dict[str, str]) -> bool:
    """The active Prefect profile (`prefect config set PREFECT_API_URL=…`) names a server:
    read from its profiles file, without importing Prefect."""
    import tomllib

    home = Path(environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
    path = Path(environ.get("PREFECT_PROFILES_PATH") or home / "profiles.toml").expanduser()
    try:
        profiles = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    active = environ.get("PREFECT_PROFILE") or profiles.get("active") or "ephemeral"
    chosen = (profiles.get("profiles") or {}).get(active) or {}
    return bool(isinstance(chosen, dict) and chosen.get("PREFECT_API_URL"))


def _say(settings: Settings, who: str | None, lines: Sequence[str]) -> None:
    """The run-log lines, scrubbed of the secret, each naming its organization when several
    run (`tell._say`'s words)."""
    secret = settings.service.client_secret
    secrets = [secret.get_secret_value() if secret is not None else None]
    for line in lines:
        log.info(oncall.plain(f"{who}: {line}" if who else line, secrets))


def _step_runner(settings: Settings, who: str | None) -> StepRunner:
    """The night's steps as plain calls, each told after it as the flow's tasks are."""
    from fundpipe.night import exceptions_of

    def step(name: str, work: Callable[[], _R], /) -> _R:
        result = work()
        found: Any = result
        if name == "ingest":
            lines = [oncall.file_line(f) for f in found.files] + [oncall.ingest_line(found)]
            _say(settings, who, lines + oncall.left_alone_lines(found))
        elif name == "sync":
            _say(settings, who, [oncall.sync_line(found)])
        elif name == "reconcile":
            exceptions = exceptions_of(found)
            lines = [oncall.reconcile_line(found)] + [oncall.exception_line(e) for e in exceptions]
            _say(settings, who, lines)
        return result

    return step


class _HostSlots:
    """`FUNDPIPE_ORG_CONCURRENCY` slots per service host (the flow's global concurrency
    limit, here a semaphore), held while an organization's ingest and sync talk to it."""

    def __init__(self, limit: int) -> None:
        self._limit = max(1, limit)
        self._slots: dict[str, threading.BoundedSemaphore] = {}
        self._lock = threading.Lock()

    def slot(self, settings: Settings) -> AbstractContextManager[object]:
        """The slot of the host `settings` talk to (created at its first use)."""
        name = limit_name(settings)
        with self._lock:
            return self._slots.setdefault(name, threading.BoundedSemaphore(self._limit))


def _one_night(
    live: Settings,
    org: Organization,
    orgs: Sequence[Organization],
    as_of: date | None,
    slots: _HostSlots,
    orgs_on_host: int,
) -> OrgRow:
    """One organization's night, as its `org-night` child would end: its row (Completed with
    its verdict as the message; else Failed, or Cancelled when another run held its files)."""
    from fundpipe.app.prefect.secrets import with_secret_block
    from fundpipe.app.prefect.sharing import publish_org
    from fundpipe.app.prefect.uiview import called
    from fundpipe.app.prefect.verdict_state import line_of
    from fundpipe.errors import InternalError, LockHeld, as_fundpipe_error
    from fundpipe.night import night
    from fundpipe.orgs import org_settings

    several = len(orgs) > 1
    who = called(org.folder, org.name) if several else None
    url = org.base_url or live.service.base_url
    host = urlsplit(url or "").hostname or "embedded"
    settings: Settings | None = None
    try:
        found, settings = org_settings(
            live, org, among=orgs, load_secret=with_secret_block, several=several
        )
        if org.name and not found.name:
            found = replace(found, name=org.name)
        org = found
        settings = shared_rate(settings, orgs_on_host)
        if org.name and not settings.service.org_name:  # the reports name it, not its id
            settings = settings.updated(service={"org_name": org.name})
        _say(
            settings,
            None,  # the line names its organization
            [
                f"organization {org.label}: state in {settings.local.data_dir}, "
                f"reports in {settings.local.reports_folder}"
            ],
        )
        one = settings
        result = night(
            one, as_of=as_of, around_service=lambda: slots.slot(one), step=_step_runner(one, who)
        )
    except Exception as exc:  # one organization's failure never stops the others
        error = as_fundpipe_error(exc)
        if isinstance(error, InternalError):
            error = error.logged_at(_logged(exc, live))
        message = str(error) + ("; this run did nothing" if isinstance(error, LockHeld) else "")
        log.error(oncall.in_words(f"{who}: {message}" if who else message))
        state = "Cancelled" if isinstance(error, LockHeld) else "Failed"
        row = replace(row_of(org, state, message, None, host), exit_code=int(error.exit_code))
        line = line_of(row)
        log.error(oncall.plain(f"{line.name}: the night failed — {line.why} (service {host})"))
        return row
    summary = OrgNight.of(org.folder, result)
    summary = replace(summary, published=publish_org(org, summary, settings))
    row = row_of(org, "Completed", "", summary, host)
    line = line_of(row)
    row = replace(row, message=line.sentence())
    _tell_the_night(summary, settings, who, line)
    return row


def _logged(exc: BaseException, settings: Settings) -> str:
    """Where a bug's traceback went: the run's log file (`fundpipe.log`)."""
    from fundpipe.app.cli.common import _log_traceback, run_log_file

    written = _log_traceback(exc, run_log_file(settings.local.data_dir))
    return str(written) if written is not None else "nowhere (the log file cannot be written)"


def _tell_the_night(summary: OrgNight, settings: Settings, who: str | None, line: Any) -> None:
    """What the night restored, where its reports are, the night in one sentence, and its
    verdict as a WARNING when it needs a person (`orgnight._tell_the_night`'s lines)."""
    import socket

    from fundpipe.app.prefect.links import openable
    from fundpipe.vocabulary import Verdict

    published = oncall.report_url(
        settings.local.reports_url, summary.workbook, settings.local.reports_folder
    )
    url = (
        openable(published, settings.local.reports_url, settings.local.reports_public_url)
        or published
    )
    reports_dir = summary.workbook.parent if summary.workbook else settings.local.reports_folder
    sentence = oncall.night_sentence("org-night", summary.files, summary.exceptions_found)
    where = oncall.reports_line(reports_dir, url, socket.gethostname())
    _say(settings, who, [*oncall.restored_lines(summary), where, sentence])
    if line.verdict is Verdict.NEEDS_A_PERSON:
        log.warning(oncall.plain(line.sentence()))


def _morning(settings: Settings, summary: Nights) -> str | None:
    """The morning view across organizations on the shared reports location (as the flow's
    `sharing.morning` writes it, without its artifact): its link, else its path; None without
    FUNDPIPE_REPORTS_URL."""
    if not settings.local.reports_url:
        return None
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from fundpipe.app.prefect.links import openable
    from fundpipe.morning import build_morning_view, describe, write_morning_view

    day = (
        summary.as_of
        or datetime.now(ZoneInfo(settings.orchestration.nightly_timezone)).date().isoformat()
    )
    view = build_morning_view(day, summary.rows)
    written = write_morning_view(settings.local.reports_url, view)
    log.info("%s; workbook: %s", describe(view), written.workbook)
    url = openable(written.workbook, settings.local.reports_url, settings.local.reports_public_url)
    return url or written.workbook


def direct_night(
    *, samples: bool, as_of: date | None, data_dir: Path | None, say: Callable[[str], object]
) -> Nights:
    """The night over every organization, in this process (see the module docstring): what
    the `nightly` flow's result is (`summary_of_run`), without Prefect. `say` tells what a
    one-time layout move moved."""
    from fundpipe.app.embedded import every_org
    from fundpipe.app.samples import copy_samples
    from fundpipe.orgs import org_settings

    settings = night_settings(data_dir)
    with every_org(settings, say) as (live, orgs):
        several = len(orgs) > 1
        if samples:
            for org in orgs:
                one = org_settings(live, org, among=orgs, load_secret=None).settings
                copy_samples(
                    live, inbox=one.local.data_dir / "inbox", org_id=org.id, single=not several
                )
        log.info("organizations tonight: %s", ", ".join(o.label for o in orgs))
        hosts: dict[str, int] = {}
        for org in orgs:
            name = limit_name(
                live.updated(service={"base_url": org.base_url or live.service.base_url})
            )
            hosts[name] = hosts.get(name, 0) + 1
        slots = _HostSlots(live.orchestration.org_concurrency)

        def run_one(org: Organization) -> OrgRow:
            name = limit_name(
                live.updated(service={"base_url": org.base_url or live.service.base_url})
            )
            return _one_night(live, org, orgs, as_of, slots, hosts[name])

        from fundpipe.nights import nights

        summary = nights(orgs, run_one, as_of=as_of.isoformat() if as_of else None)
    summary = replace(summary, morning=_morning(settings, summary))
    log.info("nightly: %s", summary.totals.line())
    return summary


def flow_night(
    samples: bool, report_date: date | None, data_dir: Path | None, verbose: bool
) -> Nights:
    """The night as the Prefect `nightly` flow (on PREFECT_API_URL's server, else a temporary
    one), read back from its final state."""
    from fundpipe.app.cli.common import prefect_defaults

    prefect_defaults(verbose)
    from fundpipe.app.prefect import flows
    from fundpipe.app.prefect.nightsummary import summary_of_run

    state = flows.nightly(
        samples=samples,
        as_of=report_date.isoformat() if report_date else None,
        data_dir=str(data_dir) if data_dir else None,
        return_state=True,
    )
    return summary_of_run(state)


def night_here(
    samples: bool, report_date: date | None, data_dir: Path | None, verbose: bool
) -> Nights:
    """The night in this process, no Prefect (`fundpipe.app.cli.direct`); `verbose` shows
    its run-log lines on standard error."""
    from fundpipe.app.cli.common import err_console
    from fundpipe.app.cli.process import say_on_stderr

    if verbose:
        say_on_stderr(RUN_LOGGER, logging.INFO)
    return direct_night(
        samples=samples,
        as_of=report_date,
        data_dir=data_dir,
        say=lambda line: err_console.print(line, soft_wrap=True),
    )

"""What the Prefect UI shows of a night, as plain functions: state names, run names, tags,
artifact keys and plain column labels.

- Every run that needs a person — a one-step run (`inbox`, `ingest_file`) that leaves a file
  for one (exit code 1), a night (`org-night`, `nightly`) whose verdict says so — ends in the
  one state "Needs a person", of type FAILED (`fundpipe.vocabulary.NEEDS_A_PERSON_STATE`, made,
  with why, in `fundpipe.app.prefect.verdict_state`).
- Runs are named by the night's date and the organization's name (`nightly-2026-11-25-…`,
  `org-night-demo-fund-b-2026-11-25-…`): the night's date is its report date (`as_of`, else the
  scheduled day in the reporting timezone), the one date its artifacts, reports and morning
  view carry. A child run is tagged `org:<name>` (to filter by in the UI) and `org-id:<id>`
  (the id, for scripts), so runs can be filtered by organization. Each flow names its own run
  (`name_run`) once it has built its settings, so no run-name callback reads the environment.
- Artifact keys carry the organization (`fundpipe-exceptions-org-a`), so the latest artifact
  of a key is that organization's; the parent's `fundpipe-open-exceptions` is one table over
  every organization.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import date, datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from fundpipe.vocabulary import Verdict, kind_words

if TYPE_CHECKING:
    from fundpipe.config import Settings
    from fundpipe.nights import OrgRow
    from fundpipe.vocabulary import ExceptionRecord

__all__ = [
    "EXCEPTION_LABELS",
    "OPEN_EXCEPTIONS_KEY",
    "RUN_NAMES",
    "called",
    "name_run",
    "night_date",
    "nightly_run_name",
    "open_exceptions_rows",
    "org_key",
    "org_part",
    "org_run_name",
    "org_tags",
    "plain_exceptions",
    "run_name",
    "slug",
    "step_run_name",
    "whole_exceptions",
]

#: Key of the parent run's table of every organization's open exceptions.
OPEN_EXCEPTIONS_KEY = "fundpipe-open-exceptions"
#: The exception's attributes (`fundpipe.vocabulary.ExceptionRecord`) and the labels a person reads.
EXCEPTION_LABELS = {
    "id": "Exception",
    "state": "State",
    "age_days": "Age (days)",
    "what": "What",
    "amount": "Amount",
    "what_to_do": "What to do",
}


def org_key(prefix: str, org: str, *rest: str) -> str:
    """An artifact key of one organization's (lowercase letters, digits and dashes only)."""
    slug = re.sub(r"[^a-z0-9]+", "-", "-".join([prefix, org, *rest]).lower()).strip("-")
    return slug[:100]


def slug(text: str) -> str:
    """``text`` as a run name's part: lowercase letters, digits and dashes
    (``Demo Fund B`` → ``demo-fund-b``)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def org_tags(org_id: str, name: str | None = None) -> list[str]:
    """The tags of an organization's runs: ``org:<name>``, the name people know it by (its id
    when it has none), to filter by in the UI; and ``org-id:<id>``, the id scripts match."""
    return [f"org:{name or org_id}", f"org-id:{org_id}"]


def called(org_id: str, name: str | None = None) -> str:
    """An organization as a log line or a task names it: ``Demo Fund B (org_demob)``, by its
    name first (its id alone when it has none)."""
    return f"{name} ({org_id})" if name and name != org_id else org_id


def night_date(as_of: str | None, zone: str, now: datetime | None = None) -> str:
    """The date a night is for (its report date): `as_of`, else today in ``zone`` — the
    reporting timezone (`Settings.reporting_timezone`), as the night's reports read it."""
    if as_of:
        return date.fromisoformat(as_of).isoformat()
    return (now or datetime.now(ZoneInfo(zone))).astimezone(ZoneInfo(zone)).date().isoformat()


#: The cells of an exceptions table cut short (`verdict_state.short`) to fit a 1600-pixel
#: screen: Prefect draws a table artifact's cells on one line, so a whole sentence pushes "What
#: to do" off the page. The whole sentences are in the run's summary (an organization's) and
#: in the verdict (every organization's).
SHORT_CELLS = ("What", "What to do")


def _cut(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its long cells (:data:`SHORT_CELLS`) cut at a word."""
    from fundpipe.app.prefect.verdict_state import short

    return {k: short(str(v)) if k in SHORT_CELLS and v else v for k, v in row.items()}


def headline(e: ExceptionRecord) -> str:
    """What an exception is about, for a table cell: its kind in words, then its vehicle,
    account or file (``Vehicle short of funds: Demo Real Assets III (veh_demo3)``, ``Sheet
    file rejected: q4.csv``), before the rest of its sentence. A file's is its sheet's name,
    whether its sentence reads ``Sheet q4.csv rejected: …`` (the warehouse's words since its
    migration 041) or ``file rejected/q4.csv (…)`` (an exception recorded before)."""
    what = e.what
    found = re.match(r"Sheet (.+?) (?:rejected:|changes )", what) or re.match(r"file (\S+)", what)
    if e.kind.startswith("file_") and found:
        what = found.group(1).rsplit("/", 1)[-1]
    return f"{kind_words(e.kind)}: {what}"


def plain_exceptions(
    exceptions: Iterable[ExceptionRecord], organization: str | None = None
) -> list[dict[str, Any]]:
    """Exceptions with the labels a person reads (and the organization first, when given),
    their "What" and "What to do" cut to fit the screen (:data:`SHORT_CELLS`)."""
    rows = []
    for e in exceptions:
        row: dict[str, Any] = {"Organization": organization} if organization else {}
        row.update({label: getattr(e, name) for name, label in EXCEPTION_LABELS.items()})
        row["What"] = headline(e)
        rows.append(_cut(row))
    return rows


def whole_exceptions(exceptions: Iterable[ExceptionRecord]) -> list[str]:
    """Each open exception as one whole markdown line (id, amount, what, what to do): what the
    cut cells of the exceptions table leave out."""
    return [
        f"- **{e.id}** ({kind_words(e.kind).lower()}"
        + (f", {e.amount}" if e.amount else "")
        + f"): {e.what} — {e.what_to_do}"
        for e in exceptions
        if e.is_open
    ]


def _zones(settings: Settings) -> tuple[str, str]:
    """The nightly's timezone (its cron's) and the reporting timezone (the night's date)."""
    return settings.orchestration.nightly_timezone, settings.pipeline.reporting_timezone


def _configured_name(settings: Settings, org_id: str) -> str:
    """The configured name of the organization ``org_id`` (FUNDPIPE_ORGS), else ''."""
    from fundpipe.orgs import configured_organizations

    found = configured_organizations(settings) or []
    return next((o.name or "" for o in found if o.folder == org_id), "")


def run_name(
    flow: str,
    scheduled: datetime,
    run_id: str,
    as_of: str | None,
    zones: tuple[str, str],
    *parts: str,
) -> str:
    """A run's name, unique within a day (`verdict_state.unique_run_name`): the flow,
    ``parts`` (an organization's name), the night's date (``as_of``, else the scheduled day in
    the reporting timezone ``zones[1]``: the date its artifacts and reports carry), the
    scheduled time as the nightly's cron reads it (in ``zones[0]``), the run id's first digits.

    A nightly scheduled at 22:50 in New York on 27 November, reporting in UTC, is the night of
    the 28th: ``nightly-2026-11-28-2250-1a2b3c4d``."""
    from fundpipe.app.prefect.verdict_state import unique_run_name

    nightly_zone, reporting_zone = (ZoneInfo(z) for z in zones)
    day = date.fromisoformat(night_date(as_of, str(reporting_zone), now=scheduled))
    at = datetime.combine(day, scheduled.astimezone(nightly_zone).time())
    return unique_run_name(flow, at, run_id, *parts)


def _unique(flow: str, zones: tuple[str, str], *parts: str) -> str:
    """The current run's name (see `run_name`)."""
    from prefect.runtime import flow_run

    when = flow_run.scheduled_start_time
    scheduled = when if isinstance(when, datetime) else datetime.now(ZoneInfo("UTC"))
    as_of = flow_run.parameters.get("as_of")
    return run_name(flow, scheduled, str(flow_run.id or ""), as_of, zones, *parts)


def nightly_run_name(settings: Settings) -> str:
    """The `nightly` run's name: `nightly-<date>-<HHMM>-<id>` (the night's date, the scheduled
    time, the run id's first digits: unique within a day; `nightly-<date>` is its prefix)."""
    return _unique("nightly", _zones(settings))


def org_part(org_id: str | None, name: str | None = None) -> str:
    """An organization in a run's name: its ``name`` slugified (``demo-fund-b``), else its id;
    '' for none."""
    if not org_id:
        return slug(name) if name else ""
    return slug(name or "") or org_id


def org_run_name(settings: Settings) -> str:
    """An `org-night` run's name: `org-night-<name>-<date>-<HHMM>-<id>` (unique within a day):
    the organization by its name (the one its parent passed, else its configured one:
    `org-night-demo-fund-b-2026-11-28-0130-1a2b3c4d`)."""
    from prefect.runtime import flow_run

    params = flow_run.parameters
    org = params.get("org")
    name = params.get("name") or (_configured_name(settings, org) if org else "")
    return _unique("org-night", _zones(settings), org_part(org, name) or "own")


def step_run_name(
    step: str, params: dict[str, Any], zone: str, now: datetime | None = None, name: str = ""
) -> str:
    """A step run's name: `<step>-<org>-<date>` (`inbox-demo-fund-b-2026-11-25`: the
    organization's ``name`` slugified, else its id; the night's date in the reporting timezone
    ``zone``), without the organization when the run is for every one (or the only one)."""
    org = params.get("org")
    day = night_date(params.get("as_of"), zone, now)
    who = (slug(name) or org) if org else ""
    return "-".join([step, *([who] if who else []), day])


def _step(step: str) -> Callable[[Settings], str]:
    def name(settings: Settings) -> str:
        from prefect.runtime import flow_run

        params = flow_run.parameters
        who = _configured_name(settings, params["org"]) if params.get("org") else ""
        return step_run_name(step, params, _zones(settings)[1], name=who)

    return name


def night_check_run_name(settings: Settings) -> str:
    """`night-check-<date>`: the date of the deadline it checks, in the reporting timezone —
    the night's date, as its runs and artifacts have it (`night_date`)."""
    from prefect.runtime import flow_run

    scheduled = flow_run.scheduled_start_time or datetime.now(ZoneInfo("UTC"))
    return f"night-check-{night_date(None, _zones(settings)[1], now=scheduled)}"


#: How each flow's run is named, from its settings: the flow names its run with `name_run` once
#: its settings are built (a run-name callback would have to read them first).
RUN_NAMES: dict[str, Callable[[Settings], str]] = {
    "nightly": nightly_run_name,
    "org-night": org_run_name,
    "inbox": _step("inbox"),
    "sync": _step("sync"),
    "reconcile": _step("reconcile"),
    "night-check": night_check_run_name,
}


def name_run(settings: Settings) -> None:
    """Name the current flow run as `RUN_NAMES` says for its flow, from ``settings`` (nothing
    outside a flow run, or for a flow not listed)."""
    from prefect.client.orchestration import get_client
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    if context is None or context.flow_run is None or context.flow is None:
        return
    naming = RUN_NAMES.get(context.flow.name)
    if naming is None:
        return
    name = naming(settings)
    with get_client(sync_client=True) as client:
        client.set_flow_run_name(flow_run_id=context.flow_run.id, name=name)
    context.flow_run.name = name


def needs_a_person(rows: Iterable[OrgRow]) -> list[str]:
    """One sentence per organization whose night needs a person (its verdict's findings: a
    rejected file, a new or worsened exception, an open exception still due), by name: what,
    how much, by when; the first three, and how many more."""
    sentences = []
    for row in rows:
        if row.verdict is not Verdict.NEEDS_A_PERSON:
            continue
        found = [f.plain for f in row.findings]
        more = f"; and {len(found) - 3} more" if len(found) > 3 else ""
        sentences.append(f"{row.name or row.organization}: {'; '.join(found[:3])}{more}")
    return sentences


def open_exceptions_table(rows: Iterable[OrgRow]) -> None:
    """The parent run's table of every organization's open exceptions (organization, id,
    amount, what to do), as the `fundpipe-open-exceptions` artifact."""
    from prefect.artifacts import create_table_artifact

    create_table_artifact(
        table=open_exceptions_rows(rows)
        or [{"Organization": "every one", "Exception": "no open exceptions"}],
        key=OPEN_EXCEPTIONS_KEY,
        description="Open exceptions of every organization tonight: who, which, how much, "
        "what to do (cut short to fit; each whole sentence: the run's verdict, "
        "fundpipe-verdict)",
    )


def open_exceptions_rows(rows: Iterable[OrgRow]) -> list[dict[str, Any]]:
    """The rows of the parent's `fundpipe-open-exceptions` table: organization, id, amount, and
    "What" and "What to do" cut to fit the screen (:data:`SHORT_CELLS`)."""
    return [
        _cut(
            {
                "Organization": row.label,
                "Exception": e.id,
                "Amount": e.amount,
                "What": headline(e),
                "What to do": e.what_to_do,
            }
        )
        for row in rows
        for e in row.exceptions
    ]

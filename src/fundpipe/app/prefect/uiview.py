"""What the Prefect UI shows of a night, as plain functions: state names, run names, tags,
artifact keys and plain column labels.

- A night that needs a person (a file rejected, an exception opened: exit code 1) ends in a
  state of type COMPLETED named :data:`NEEDS_REVIEW` — the UI shows the name as the badge, so
  it no longer looks like a clean night, yet the dashboard does not count it as failed.
- Runs are named by date and organization (`nightly-2026-11-25`, `org-night-<org>-2026-11-25`)
  and a child run is tagged `org:<org>`, so runs can be filtered by organization. The date is
  in the nightly's timezone, a setting: each flow names its own run (`name_run`) once it has
  built its settings, so no run-name callback reads the environment.
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

# the state name of a night that needs a person, defined beside the night the shells show
from fundpipe.nights import NEEDS_REVIEW

if TYPE_CHECKING:
    from fundpipe.config import Settings
    from fundpipe.night import NightException
    from fundpipe.nights import OrgRow

__all__ = [
    "EXCEPTION_LABELS",
    "NEEDS_REVIEW",
    "OPEN_EXCEPTIONS_KEY",
    "RUN_NAMES",
    "name_run",
    "night_date",
    "nightly_run_name",
    "org_key",
    "org_run_name",
    "org_tag",
    "plain_exceptions",
    "step_run_name",
]

#: Key of the parent run's table of every organization's open exceptions.
OPEN_EXCEPTIONS_KEY = "fundpipe-open-exceptions"
#: The exception's attributes (`fundpipe.night.NightException`) and the labels a person reads.
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


def org_tag(org: str) -> str:
    """The tag of an organization's runs."""
    return f"org:{org}"


def night_date(as_of: str | None, zone: str, now: datetime | None = None) -> str:
    """The date a night is for: `as_of`, else today in the nightly's timezone."""
    if as_of:
        return date.fromisoformat(as_of).isoformat()
    return (now or datetime.now(ZoneInfo(zone))).astimezone(ZoneInfo(zone)).date().isoformat()


def plain_exceptions(
    exceptions: Iterable[NightException], organization: str | None = None
) -> list[dict[str, Any]]:
    """Exceptions with the labels a person reads (and the organization first, when given)."""
    rows = []
    for e in exceptions:
        row: dict[str, Any] = {"Organization": organization} if organization else {}
        row.update({label: getattr(e, name) for name, label in EXCEPTION_LABELS.items()})
        rows.append(row)
    return rows


def _unique(flow: str, zone: str, *parts: str) -> str:
    """The current run's name, unique within a day (`verdict_state.unique_run_name`): the flow,
    ``parts``, the night's date (its `as_of`, else the scheduled day in ``zone``, the nightly's
    timezone), the scheduled time, the run id's first digits."""
    from prefect.runtime import flow_run

    from fundpipe.app.prefect.verdict_state import unique_run_name

    when = flow_run.scheduled_start_time
    start = (
        when.astimezone(ZoneInfo(zone))
        if isinstance(when, datetime)
        else datetime.now(ZoneInfo(zone))
    )
    as_of = flow_run.parameters.get("as_of")
    if as_of:
        start = datetime.combine(date.fromisoformat(as_of), start.timetz())
    return unique_run_name(flow, start, str(flow_run.id or ""), *parts)


def nightly_run_name(zone: str) -> str:
    """The `nightly` run's name: `nightly-<date>-<HHMM>-<id>` (the night's date, the scheduled
    time, the run id's first digits: unique within a day; `nightly-<date>` is its prefix)."""
    return _unique("nightly", zone)


def org_run_name(zone: str) -> str:
    """An `org-night` run's name: `org-night-<org>-<date>-<HHMM>-<id>` (unique within a day)."""
    from prefect.runtime import flow_run

    return _unique("org-night", zone, flow_run.parameters.get("org") or "own")


def step_run_name(step: str, params: dict[str, Any], zone: str, now: datetime | None = None) -> str:
    """A step run's name: `<step>-<org>-<date>` (`inbox-org-a-2026-11-25`), without the
    organization when the run is for every organization (or the only one)."""
    org = params.get("org")
    day = night_date(params.get("as_of"), zone, now)
    return "-".join([step, *([org] if org else []), day])


def _step(step: str) -> Callable[[str], str]:
    def name(zone: str) -> str:
        from prefect.runtime import flow_run

        return step_run_name(step, flow_run.parameters, zone)

    return name


#: How each flow's run is named, from the nightly's timezone: the flow names its run with
#: `name_run` once its settings are built (a run-name callback would have to read them first).
RUN_NAMES: dict[str, Callable[[str], str]] = {
    "nightly": nightly_run_name,
    "org-night": org_run_name,
    "inbox": _step("inbox"),
    "sync": _step("sync"),
    "reconcile": _step("reconcile"),
}


def name_run(settings: Settings) -> None:
    """Name the current flow run as `RUN_NAMES` says for its flow, in `settings`' nightly
    timezone (nothing outside a flow run, or for a flow not listed)."""
    from prefect.client.orchestration import get_client
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    if context is None or context.flow_run is None or context.flow is None:
        return
    naming = RUN_NAMES.get(context.flow.name)
    if naming is None:
        return
    name = naming(settings.orchestration.nightly_timezone)
    with get_client(sync_client=True) as client:
        client.set_flow_run_name(flow_run_id=context.flow_run.id, name=name)
    context.flow_run.name = name


def needs_a_person(rows: Iterable[OrgRow]) -> list[str]:
    """One sentence per organization whose night needs a person (its verdict's findings: a
    rejected file, a new or worsened exception, an open exception still due), by name: what,
    how much, by when; the first three, and how many more."""
    sentences = []
    for row in rows:
        if row.verdict.value != "needs a person":
            continue
        found = [f.plain for f in row.findings]
        more = f"; and {len(found) - 3} more" if len(found) > 3 else ""
        sentences.append(f"{row.name or row.organization}: {'; '.join(found[:3])}{more}")
    return sentences


def open_exceptions_table(rows: Iterable[OrgRow]) -> None:
    """The parent run's table of every organization's open exceptions (organization, id,
    amount, what to do), as the `fundpipe-open-exceptions` artifact."""
    from prefect.artifacts import create_table_artifact

    table = [
        {
            "Organization": row.label,
            "Exception": e.id,
            "Amount": e.amount,
            "What": e.what,
            "What to do": e.what_to_do,
        }
        for row in rows
        for e in row.exceptions
    ]
    create_table_artifact(
        table=table or [{"Organization": "every one", "Exception": "no open exceptions"}],
        key=OPEN_EXCEPTIONS_KEY,
        description="Open exceptions of every organization tonight: who, which, how much, "
        "what to do",
    )

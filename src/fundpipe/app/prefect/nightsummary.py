"""The night over every organization in Prefect's terms: a child run's state as its row
(`org_row`), the parent run's artifact (`cross_markdown`), a run's link (`run_link`), and the
`nightly` run's result read back (`summary_of_run`).

The types are the library's (`fundpipe.nights`: `OrgNight`, `OrgRow`, `Nights`, the verdict);
this module only translates Prefect states to and from them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fundpipe.nights import Nights, NightsFailed, OrgNight, OrgRow, row_of

if TYPE_CHECKING:
    from prefect import State

    from fundpipe.config import Organization

__all__ = ["cross_markdown", "org_row", "run_link", "summary_of_run"]


def state_word(state: State[Any] | None) -> str:
    """A child run's state as its row says it: its type, titled ("Completed", "Failed", …);
    a night that completed but needs a person ("Needs a person", of type FAILED so that it is
    not green) is "Completed" (its verdict says the rest)."""
    from fundpipe.app.prefect.verdict_state import needs_a_person_state

    if state is None:
        return "Failed"
    return "Completed" if needs_a_person_state(state) else state.type.value.title()


def carried(data: Any) -> Any:
    """A run's result, out of the "Needs a person" state's exception that carries it."""
    from fundpipe.app.prefect.verdict_state import NeedsAPerson

    return data.value if isinstance(data, NeedsAPerson) else data


def org_row(
    org: Organization, state: State[Any] | None, night: OrgNight | None, host: str = ""
) -> OrgRow:
    """One organization's row from its child run's final state (None: it never started)."""
    return row_of(
        org,
        state_word(state),
        (state.message if state is not None else None) or "",
        night,
        host,
    )


def run_link(flow_run_id: Any) -> str:
    """The Prefect UI page of a flow run (`PREFECT_UI_URL`), else the run's id."""
    from prefect.settings import PREFECT_UI_URL

    ui = PREFECT_UI_URL.value()
    return f"{ui.rstrip('/')}/runs/flow-run/{flow_run_id}" if ui else str(flow_run_id)


def cross_markdown(summary: Nights) -> str:
    """The parent run's artifact: one row per organization, and the totals."""
    lines = [
        f"# Every organization's night — {summary.as_of} — the numbers",
        "",
        "| Organization | State | Files | Rejected | Distributions | Total | Open exceptions "
        "| Run |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in summary.rows:
        run = row.run
        # a link reads "open run" (a run id is no word, and 36 characters pushed it off the page)
        link = f"[open run]({run})" if run.startswith("http") else f"`{run}`"
        lines.append(
            f"| {row.name or row.organization} | {row.state_shown} | {row.files} | {row.rejected} | "
            f"{row.distributions} | {row.total} | {row.open_exceptions} | {link} |"
        )
    t = summary.totals
    lines.append(
        f"| **all {t.organizations}** | {t.failed} failed | {t.files} | {t.rejected} "
        f"| {t.distributions} | {t.total} | {t.open_exceptions} | |"
    )
    if summary.morning and summary.morning.startswith(("http://", "https://")):
        lines += ["", f"Morning view across organizations: [morning.xlsx]({summary.morning})"]
    elif summary.morning:
        lines += ["", f"Morning view across organizations: `{summary.morning}`"]
    if summary.failed:
        lines += ["", "## Did not complete", ""]
        from fundpipe.app.prefect.oncall import in_words

        lines += [
            f"- {r.name or r.organization} ({r.state}): {in_words(r.message)}"
            for r in summary.failed
        ]
    return "\n".join(lines) + "\n"


def summary_of_run(state: Any) -> Nights:
    """The night over every organization of a finished `nightly` flow run (a Prefect state).

    The parent returns it even when an organization failed (inside `NightsFailed`): its
    `exit_code` says so, and its rows say which and why.

    A run that did not complete otherwise raises the fundpipe error its exit code stands for,
    with the state's message (fundpipe's plain sentence): the CLI prints it and exits with that
    code. A run that crashed, or failed with no error of ours, is a bug's: internal [5].
    """
    from fundpipe.errors import (
        ExitCode,
        FundpipeError,
        InputError,
        InternalError,
        LockHeld,
        MachineFault,
        ServiceUnavailable,
    )

    data = carried(state.result(raise_on_failure=False) if state.data is not None else None)
    if isinstance(data, Nights):
        return data
    if isinstance(data, NightsFailed):
        return data.nights
    code = data.exit_code if isinstance(data, FundpipeError) else ExitCode.INTERNAL
    error: type[FundpipeError] = {
        ExitCode.USAGE: InputError,
        ExitCode.LOCKED: LockHeld,
        ExitCode.SERVICE: ServiceUnavailable,
        ExitCode.MACHINE: MachineFault,
    }.get(ExitCode(code), InternalError)
    raise error(state.message or state.name)

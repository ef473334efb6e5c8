"""Every rich table and line fundpipe prints: the CLI renders library results with these.

The library returns data and never prints; this module turns its results into rich output, with
the one money formatter (`fundpipe.cents.format_cents`). Progress bars (`RichProgress`, from
`fundpipe.app.cli.progress_bars`) are drawn on stderr, so `--json` output on stdout stays clean.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from fundpipe.app.cli.progress_bars import RichProgress
from fundpipe.cents import format_cents
from fundpipe.words import counted

if TYPE_CHECKING:  # the types only: a command that reads no sheet never imports pandas
    from fundpipe.nights import Nights
    from fundpipe.plan import Plan
    from fundpipe.plan.preflight import Preflight
    from fundpipe.reconcile import ExceptionEvent, ReconcileResult
    from fundpipe.submit import IngestResult
    from fundpipe.validate import FileReport
    from fundpipe.vocabulary import ExceptionRecord

__all__ = [
    "RichProgress",
    "format_cents",
    "plan_phases",
    "render_config",
    "render_counts",
    "render_ingest",
    "render_plan",
    "render_preflight",
    "render_run_summary",
    "render_summary",
    "render_validation",
]


def render_summary(result: ReconcileResult, console: Console) -> None:
    """Print the run facts, totals and exception counts of `result` to `console`."""
    s = result.summary
    table = Table(title=f"Reconciliation as of {s.as_of.isoformat()}", show_header=True)
    table.add_column("", style="bold")
    table.add_column("value", justify="right")
    table.add_row("Last sync", s.last_sync_id or "none")
    table.add_row("Vehicles", f"{s.vehicles:,}")
    table.add_row("Depository available", format_cents(s.available_cents))
    table.add_row("Open obligations", format_cents(s.obligations_cents))
    short_style = "red" if s.shortfall_cents else "green"
    table.add_row(
        "Shortfall",
        f"[{short_style}]{format_cents(s.shortfall_cents)}[/] "
        f"({counted(f'{s.vehicles_short:,}', 'vehicle')})",
    )
    table.add_row("Unexplained this month (Roll-forward)", format_cents(s.unexplained_cents))
    table.add_row("Sheet rows / service payments", f"{s.sheet_rows:,} / {s.service_payments:,}")
    table.add_row("Payments matching", f"{s.payments_ok:,}")
    console.print(table)

    exceptions = Table(title="Exceptions", show_header=True)
    exceptions.add_column("kind")
    exceptions.add_column("count", justify="right")
    for kind, count in s.exception_counts.items():
        exceptions.add_row(kind, f"{count:,}")
    total_style = "red" if s.exceptions else "green"
    exceptions.add_row("[bold]total[/]", f"[{total_style}]{s.exceptions:,}[/]")
    exceptions.add_row("open (not acknowledged)", f"{s.open_exceptions:,}")
    exceptions.add_row("acknowledged", f"{s.acknowledged_exceptions:,}")
    console.print(exceptions)
    console.print(f"Reports: {result.workbook} (+ Parquet per view in {result.out_dir})")


def render_plan(plan: Plan, console: Console) -> None:
    """Print a plan: counts, totals per vehicle and per distribution, and its requests.

    Account numbers are masked; placeholders show as ``<entity:REF>``.
    """

    counts = plan.counts()
    requests = ", ".join(f"{counts[p]} {p} request(s)" for p in plan_phases(plan))
    console.print(
        f"[bold]Plan[/bold] for {plan.org_id}: {len(plan.files)} file(s), "
        f"{counts['distributions_create']} distribution(s) to create "
        f"({counts['payments_to_create']} payments), {counts['distributions_link']} already "
        f"at the service, {counts['distributions_conflict']} in conflict; "
        + (requests or "no request would be sent")
    )
    # a table with no rows says nothing the line above did not: only the ones with rows
    totals = plan.totals_by_vehicle()
    if totals:
        vehicles = Table(title="Totals per vehicle (to create)")
        vehicles.add_column("vehicle")
        vehicles.add_column("USD", justify="right")
        for vehicle, cents in totals.items():
            vehicles.add_row(vehicle, format_cents(cents))
        console.print(vehicles)
    if plan.distributions:
        _render_plan_distributions(plan, console)
    if plan.requests:
        _render_plan_requests(plan, console)


def _render_plan_distributions(plan: Plan, console: Console) -> None:
    dists = Table(title="Distributions")
    for col in (
        "file",
        "external_reference",
        "name",
        "vehicle",
        "date",
        "payments",
        "USD",
        "action",
    ):
        dists.add_column(col, justify="right" if col in {"payments", "USD"} else "left")
    excluded = {f.file_hash for f in plan.files if f.excluded}
    for d in plan.distributions:
        action = d.action if d.file_hash not in excluded else f"{d.action} (refused)"
        dists.add_row(
            d.source_file,
            d.external_reference,
            d.name,
            d.vehicle,
            d.distribution_date,
            str(len(d.payments)),
            format_cents(d.total_cents),
            action + (f": {d.reason}" if d.reason else ""),
        )
    console.print(dists)


def _render_plan_requests(plan: Plan, console: Console) -> None:
    from fundpipe.plan import display_body

    reqs = Table(title="Requests it would send")
    for col in ("#", "phase", "request", "elements", "what", "Idempotency-Key"):
        reqs.add_column(col)
    for n, r in enumerate(plan.requests, 1):
        key = (
            r.resolve_key(plan.org_id)
            if not r.placeholders
            else "after " + ", ".join(sorted(str(p) for p in r.placeholders)[:3])
        )
        what = r.label
        if r.phase != "distributions":
            what += " " + json.dumps(display_body(list(r.body)), sort_keys=True)[:160]
        reqs.add_row(str(n), r.phase, f"{r.method} {r.path}", str(len(r.body)), what, key)
    console.print(reqs)


def plan_phases(plan: Plan) -> list[str]:
    """The phases the plan has requests in, in order."""
    from fundpipe.plan import PHASES

    return [p for p in PHASES if plan.phase(p)]


def render_ingest(result: IngestResult, console: Console) -> None:
    """Print one line per file: its verdict, rows by ledger state, and why; then the warnings
    and each inbox entry left alone with its reason."""
    for f in result.files:
        states = ", ".join(f"{n} {s}" for s, n in sorted(f.payment_states.items()))
        style = {"processed": "green", "duplicate": "cyan", "incomplete": "yellow"}.get(
            f.state, "red"
        )
        line = f"[{style}]{f.state}[/{style}] {f.source_file}"
        if f.distributions:
            line += (
                f": {counted(f.distributions, 'distribution')}, {counted(f.rows, 'row')}, "
                f"{format_cents(f.total_cents, unit='USD')}"
            )
        if states:
            line += f" ({states})"
        if f.message:
            line += f" — {f.message}"
        console.print(line, highlight=False)
    for text in [*result.warnings, *result.notes]:
        console.print(f"[yellow]warning[/] {escape(text)}", highlight=False)
    for entry in result.left_alone:  # every inbox entry gets a word
        console.print(
            f"{escape(entry.name)} — [yellow]left alone:[/] {escape(entry.reason)}",
            highlight=False,
            soft_wrap=True,
        )


def render_validation(
    reports: Sequence[FileReport], console: Console, *, max_issues: int = 50
) -> None:
    """Print a readable verdict per file and a table of its problems to ``console``: each
    identical problem once with its rows (``2–7, 9``), the column with its Excel letter — the
    lines of the file's error report."""
    from fundpipe.validate import group_issues

    for report in reports:
        verdict = (
            "[green]valid[/]"
            if report.valid
            else ("[red]unreadable[/]" if report.unreadable else "[red]rejected[/]")
        )
        console.print(
            f"[bold]{escape(report.file)}[/] — {verdict}, {counted(f'{report.rows:,}', 'row')}, {counted(f'{len(report.errors):,}', 'error')}, {counted(f'{len(report.warnings):,}', 'warning')}"
        )
        groups = group_issues(report)
        if not groups:
            continue
        shown = groups[:max_issues]
        table = Table(show_lines=False)
        sheets = any(g.first.sheet for g in shown)  # a CSV's table has no sheet column
        # capped, so the room left holds the longest check name at 80 columns
        table.add_column("")
        if sheets:
            table.add_column("sheet", overflow="fold", max_width=10)
        table.add_column("rows", overflow="fold", max_width=12)
        table.add_column("column", overflow="fold", max_width=14)
        table.add_column("value", overflow="fold", max_width=14)
        # a check is a name to look up: whole on its own line, its reason wrapping below it
        longest = max(len(g.first.check) for g in shown)
        table.add_column("check: reason", overflow="fold", min_width=longest)
        for group in shown:
            issue = group.first
            kind = "[red]error[/]" if group.severity == "error" else "[yellow]warning[/]"
            column = escape(issue.column or "")
            table.add_row(
                kind,
                *([escape(issue.sheet or "")] if sheets else []),
                group.rows_text(limit=20),
                f"{column} ({issue.letter})" if issue.letter else column,
                escape(issue.value or ""),
                Text.assemble((issue.check, "bold"), "\n", issue.reason),
            )
        console.print(table)
        if len(groups) > max_issues:
            console.print(f"… and {len(groups) - max_issues:,} more (use --format json for all)")


def render_preflight(preflight: Preflight | None, console: Console) -> None:
    """Print the pre-flight's warnings and refusals, one line each."""
    if preflight is None:
        return
    for issue in preflight.issues:
        style = "red" if issue.level == "error" else "yellow"
        console.print(f"[{style}]{issue.level}[/{style}] {issue.source_file}: {issue.message}")


def render_run_summary(summary: Nights, console: Console) -> None:
    """Print a nightly run's summary: one row per organization, the totals, what failed, the
    rejected files, the files dropped again, the warnings and where each organization's
    reports are."""
    table = Table(
        title=f"fundpipe nightly run — {summary.as_of or ''} — every organization",
        show_header=True,
    )
    # short headers: the table fits 80 columns (a pipe, a CI log)
    for column in ("org", "state", "files", "rejected", "distr.", "total", "open exc."):
        table.add_column(column, justify="left" if column in {"org", "state"} else "right")
    for row in summary.rows:
        table.add_row(
            escape(row.organization),
            row.state_shown,
            str(row.files),
            str(row.rejected),
            str(row.distributions),
            row.total,
            str(row.open_exceptions),
            style="" if row.completed else "red",
        )
    t = summary.totals
    table.add_row(
        f"all {t.organizations}",
        f"{t.failed} failed",
        str(t.files),
        str(t.rejected),
        str(t.distributions),
        t.total,
        str(t.open_exceptions),
        style="bold",
    )
    console.print(table)
    for row in summary.rows:  # what a night restored from the record before it ran
        if row.night is not None and row.night.restored:
            console.print(
                f"[cyan]restored[/] {escape(row.organization)}: "
                f"{escape(row.night.restored.removeprefix('restored '))}",
                soft_wrap=True,
                highlight=False,
            )
    for row in summary.failed:  # one line each, whatever the terminal's width
        console.print(f"[red]{escape(row.organization)}[/] {escape(row.message)}", soft_wrap=True)
    for row in summary.needing_a_person:  # the verdict's findings: what, how much, by when
        for finding in row.why[:5]:
            console.print(
                f"[yellow]needs a person[/] {escape(row.organization)}: {escape(finding.plain)}",
                soft_wrap=True,
            )
        if len(row.why) > 5:
            console.print(
                f"[yellow]needs a person[/] {escape(row.organization)}: … and "
                f"{len(row.why) - 5} more (the exceptions table of its run)"
            )
    for org, f in summary.rejected_files:
        report = f.error_report or f.moved_to or ""
        console.print(f"[red]rejected[/] {org}: {f.source_file} — error report: {report}")
    for org, f in summary.redropped_files:  # recognised: said, with the file it repeats
        console.print(
            f"[cyan]dropped again[/] {escape(org)}: {escape(f.source_file)} — "
            f"{escape(f.message or 'same content as a file already processed: nothing sent')}",
            soft_wrap=True,
            highlight=False,
        )
    for text in summary.warnings:
        console.print(f"[yellow]warning[/] {escape(text)}", highlight=False)
    for row in summary.rows:
        if row.night is not None and row.night.workbook:
            console.print(f"{row.organization} reports: {row.night.workbook}", soft_wrap=True)


def render_counts(title: str, counts: dict[str, Any], console: Console) -> None:
    """Print a two-column table of counts (what `fundpipe sync` prints)."""
    table = Table(title=title, show_header=True)
    table.add_column("what")
    table.add_column("rows", justify="right")
    for key, value in counts.items():
        table.add_row(str(key), f"{value:,}" if isinstance(value, int) else str(value))
    console.print(table)


def render_config(values: dict[str, Any], console: Console) -> None:
    """Print the effective configuration (already redacted) as a table: a group's settings
    as `group.field` (`http.retry_deadline_s`), in the groups' order; then a table for each
    organization (`fundpipe.submit.binding.describe_orgs`)."""
    table = Table(title="fundpipe configuration", show_header=True)
    table.add_column("setting")
    table.add_column("value")
    orgs = values.get("organizations")
    for key, value in values.items():
        if key == "organizations" and isinstance(orgs, dict):
            continue  # a table each, below
        fields = value if isinstance(value, dict) else {None: value}
        for field, shown in fields.items():
            name = key if field is None else f"{key}.{field}"
            table.add_row(name, "" if shown is None else str(shown))
    console.print(table)
    if isinstance(orgs, dict):
        for org_id, described in orgs.items():
            one = Table(title=f"organization {org_id}", show_header=False)
            one.add_column("what")
            one.add_column("value", overflow="fold")  # a path is folded, never cut
            for what, shown in described.items():
                one.add_row(what, str(shown))
            console.print(one)


def render_exception_log(found: Sequence[ExceptionRecord], console: Console) -> None:
    """The exception log as a table: id, state, owner, age, what, amount, what to do (the
    words of `fundpipe.reconcile.log_row`, which the desk shows too)."""
    from fundpipe.reconcile import LOG_COLUMNS, RIGHT_ALIGNED, log_row

    if not found:
        console.print("[green]no exceptions[/]")
        return
    table = Table(show_header=True, title="Exceptions")
    for column in LOG_COLUMNS:
        table.add_column(
            column,
            justify="right" if column in RIGHT_ALIGNED else "left",
            no_wrap=column == "Id",
        )
    for t in found:
        table.add_row(*log_row(t))
    console.print(table)


def render_exception_history(
    found: ExceptionRecord, events: Sequence[ExceptionEvent], console: Console
) -> None:
    """One exception as the log shows it, then its history: when (UTC), as of, event, by whom
    (name and operating-system user), amount and note (an assignment names the owner) — the
    words of `fundpipe.reconcile.history_row`, which the desk's exception page shows too."""
    from fundpipe.reconcile import HISTORY_COLUMNS, RIGHT_ALIGNED, history_row

    render_exception_log([found], console)
    table = Table(show_header=True, title=f"History of {found.id}")
    for column in HISTORY_COLUMNS:
        table.add_column(column, justify="right" if column in RIGHT_ALIGNED else "left")
    for e in events:
        table.add_row(*history_row(e))
    console.print(table)

"""Rendering a reconciliation's summary as rich tables (what `fundpipe reconcile` prints)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from fundpipe.reconcile.views import ReconcileResult

__all__ = ["format_cents", "render_summary"]


def format_cents(cents: int) -> str:
    """Integer cents as `$1,234.56` (negative as `-$1,234.56`), without floats."""
    sign = "-" if cents < 0 else ""
    dollars, rest = divmod(abs(cents), 100)
    return f"{sign}${dollars:,}.{rest:02d}"


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
        f"[{short_style}]{format_cents(s.shortfall_cents)}[/] ({s.vehicles_short:,} vehicles)",
    )
    table.add_row("Unexplained balance movement", format_cents(s.unexplained_cents))
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
    console.print(exceptions)
    console.print(f"Reports: {result.workbook} (+ Parquet per view in {result.out_dir})")

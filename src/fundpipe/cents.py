"""The one money formatter: integer cents → dollars as an analyst reads them.

Pure and dependency-free on purpose: every command that prints or reports an amount imports it,
and one that reads no sheet must not pay for pandas to say `$1,234.56`. Parsing amounts out of
sheets is `fundpipe.sheets.money`, which re-exports this function.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["format_cents"]


def format_cents(cents: int, *, unit: Literal["$", "USD"] = "$") -> str:
    """``123456`` → ``$1,234.56`` (``-5`` → ``-$0.05``), or ``1,234.56 USD`` with
    ``unit="USD"``: the one money formatter (messages, summaries, every table the CLI prints),
    exact — no floats."""
    sign = "-" if cents < 0 else ""
    dollars, rest = divmod(abs(cents), 100)
    if unit == "USD":
        return f"{sign}{dollars:,}.{rest:02d} USD"
    return f"{sign}${dollars:,}.{rest:02d}"

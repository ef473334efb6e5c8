"""The one formula-neutraliser of every spreadsheet fundpipe writes (workbook and error reports).

A text cell that a spreadsheet would read as a formula (starting with ``=``, ``+``, ``-``, ``@``,
a tab or a carriage return) gets an apostrophe in front, so an analyst's ``=HYPERLINK(...)`` in
a sheet cannot run when a report is opened.
"""

from __future__ import annotations

__all__ = ["INJECTION_PATTERN", "INJECTION_PREFIXES", "neutralise"]

#: Leading characters that spreadsheet programs may read as the start of a formula.
INJECTION_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
#: The same, as a regular expression over a whole column (Arrow compute).
INJECTION_PATTERN = r"^[=+\-@\t\r]"


def neutralise(value: object) -> str:
    """``value`` as text safe for a spreadsheet cell (None → ``""``): an apostrophe before a
    formula-like start."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(INJECTION_PREFIXES) else text

"""How every sheet of the workbook looks on screen and on paper: formats and page setup.

A reconciliation is read printed and signed, so every sheet prints: landscape, one page wide
(as many pages down as it takes), the header row repeated on every page, and a header and footer
naming the organization, the sheet, the as-of date and "Page x of y". The Summary prints on one
page.
"""

from __future__ import annotations

from dataclasses import dataclass

import xlsxwriter
from xlsxwriter.format import Format
from xlsxwriter.worksheet import Worksheet

__all__ = ["CURRENCY", "Formats", "PageHeader", "set_page"]

CURRENCY = '"$"#,##0.00;[Red]-"$"#,##0.00'
#: Every data cell of a row sits at its top: a wrapped name and its figures read on one line
#: (figures at the bottom of a tall row lined up with the next row's name).
_TOP: dict[str, object] = {"valign": "top"}
#: Excel allows 255 characters in a header or footer, codes included.
_HEADER_LIMIT = 255


class Formats:
    """The cell formats of one workbook (xlsxwriter formats belong to their workbook)."""

    def __init__(self, workbook: xlsxwriter.Workbook) -> None:
        self.header = workbook.add_format(
            {"bold": True, "bg_color": "#DDEBF7", "border": 1, "text_wrap": True, "valign": "top"}
        )
        self.title = workbook.add_format({"bold": True, "font_size": 14})
        self.subtitle = workbook.add_format({"bold": True, "font_size": 11})
        self.bold = workbook.add_format({"bold": True})
        self.money = workbook.add_format({"num_format": CURRENCY, **_TOP})
        self.money_bold = workbook.add_format(
            {"num_format": CURRENCY, "bold": True, "top": 1, **_TOP}
        )
        self.integer_bold = workbook.add_format(
            {"num_format": "#,##0", "bold": True, "top": 1, **_TOP}
        )
        self.instant = workbook.add_format({"num_format": "yyyy-mm-dd hh:mm:ss", **_TOP})
        self.date = workbook.add_format({"num_format": "yyyy-mm-dd", **_TOP})
        self.integer = workbook.add_format({"num_format": "#,##0", **_TOP})
        # a true/false cell reads TRUE or FALSE in every spreadsheet (LibreOffice would show a
        # general-format boolean as 1 in some rows)
        self.boolean = workbook.add_format({"num_format": '"TRUE";"TRUE";"FALSE"', **_TOP})
        self.plain = workbook.add_format(dict(_TOP))
        self.wrap = workbook.add_format({"text_wrap": True, **_TOP})
        self.signature = workbook.add_format({"bottom": 1})
        self.warning = workbook.add_format({"bold": True, "font_color": "#C00000"})
        self._workbook = workbook
        self._totals: dict[str, Format] = {}

    def total_of(self, kind: str) -> Format:
        """A column's format on a total row: bold, its figures under a rule (money, counts,
        true/false); text bold alone."""
        if kind not in self._totals:
            number = {
                "money": CURRENCY,
                "number": "#,##0",
                "bool": '"TRUE";"TRUE";"FALSE"',
                "date": "yyyy-mm-dd",
                "instant": "yyyy-mm-dd hh:mm:ss",
            }.get(kind)
            spec: dict[str, object] = {"bold": True, **_TOP}
            if number is not None:
                spec.update(num_format=number, top=1)
            self._totals[kind] = self._workbook.add_format(spec)
        return self._totals[kind]


@dataclass(frozen=True, slots=True)
class PageHeader:
    """What the printed header and footer of every sheet say."""

    organization: str = ""
    as_of: str = ""
    title: str = "Reconciliation"


def _code_text(text: str) -> str:
    # `&` starts a header code; a literal ampersand is written twice.
    return text.replace("&", "&&")


def set_page(
    ws: Worksheet, sheet: str, page: PageHeader, *, one_page: bool = False, titles: bool = True
) -> None:
    """Landscape, one page wide (`one_page`: and one page tall), the first row repeated on
    every printed page (`titles`), and the header / footer of `page` for sheet `sheet`."""
    ws.set_landscape()
    ws.set_margins(left=0.4, right=0.4, top=0.7, bottom=0.6)
    ws.fit_to_pages(1, 1 if one_page else 0)
    if titles:
        ws.repeat_rows(0)
    organization = _code_text(page.organization or "organization not named")[:80]
    centre = _code_text(f"{page.title} — {sheet}")[:80]
    right = _code_text(f"As of {page.as_of}" if page.as_of else "")[:60]
    header = f"&L{organization}&C&B{centre}&B&R{right}"
    footer = f"&L{organization}&CPage &P of &N&R{right}"
    ws.set_header(header[:_HEADER_LIMIT], {"margin": 0.3})
    ws.set_footer(footer[:_HEADER_LIMIT], {"margin": 0.3})

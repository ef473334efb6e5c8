"""How every sheet of the workbook looks on screen and on paper: formats and page setup.

A reconciliation is read printed and signed, so every sheet prints: landscape, the header row
repeated on every page, and a header and footer naming the organization, the sheet, the as-of date
and "Page x of y". A sheet prints one page wide (as many pages down as it takes) when that keeps
its 11 pt text at 8 pt or more (a print scale of at least :data:`MIN_PRINT_SCALE` percent on the
narrower of US Letter and A4); a wider sheet prints at that scale, its columns across as many
pages as they need, page by page across then down, its naming columns repeated at the left of
every page, so no page is too small to read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import xlsxwriter
from xlsxwriter.format import Format
from xlsxwriter.worksheet import Worksheet

__all__ = [
    "CURRENCY",
    "MIN_PRINT_SCALE",
    "PRINTABLE_WIDTH_PT",
    "YES_NO",
    "Formats",
    "PageHeader",
    "column_points",
    "fit_scale",
    "set_page",
]

CURRENCY = '"$"#,##0.00;[Red]-"$"#,##0.00'
#: A true/false cell's number format: it prints Yes or No (true is 1, false 0).
YES_NO = '"Yes";"Yes";"No"'
#: Every data cell of a row sits at its top: a wrapped name and its figures read on one line
#: (figures at the bottom of a tall row lined up with the next row's name).
_TOP: dict[str, object] = {"valign": "top"}
#: Excel allows 255 characters in a header or footer, codes included.
_HEADER_LIMIT = 255
#: The smallest print scale (percent) of a sheet: its 11 pt text prints at 8.25 pt.
MIN_PRINT_SCALE = 75
#: Left and right page margins, inches.
_SIDE_MARGIN_IN = 0.4
#: What a landscape page can print across, in points: US Letter's 11 inches (narrower than A4's
#: 11.69) less both margins.
PRINTABLE_WIDTH_PT = (11.0 - 2 * _SIDE_MARGIN_IN) * 72


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
        # a true/false cell reads Yes or No, in words, in every spreadsheet (LibreOffice would
        # show a general-format boolean as 1 in some rows)
        self.boolean = workbook.add_format({"num_format": YES_NO, **_TOP})
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
                "bool": YES_NO,
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


def column_points(width: float) -> float:
    """How wide a column `width` characters wide (Excel's unit, the default 11 pt font's digit)
    prints, in points: 7 pixels a character and 5 of padding, at 96 pixels an inch."""
    return int(width * 7 + 5) * 0.75


def fit_scale(widths: Sequence[float]) -> int:
    """The print scale (percent, at most 100) at which columns `widths` wide fit one page
    across."""
    total = sum(column_points(w) for w in widths)
    return 100 if total <= PRINTABLE_WIDTH_PT else int(100 * PRINTABLE_WIDTH_PT / total)


def set_page(
    ws: Worksheet,
    sheet: str,
    page: PageHeader,
    *,
    widths: Sequence[float],
    keep_left: int = 0,
    titles: bool = True,
) -> None:
    """Set how sheet `sheet` prints: landscape, the first row repeated on every page (`titles`),
    the header / footer of `page`; one page wide when its printed columns, `widths` wide (in
    characters), fit at :data:`MIN_PRINT_SCALE` or more, else at that scale across pages, with
    its first `keep_left` columns repeated at the left of each."""
    ws.set_landscape()
    ws.set_margins(left=_SIDE_MARGIN_IN, right=_SIDE_MARGIN_IN, top=0.7, bottom=0.6)
    if fit_scale(widths) >= MIN_PRINT_SCALE:
        ws.fit_to_pages(1, 0)
    else:
        ws.set_print_scale(MIN_PRINT_SCALE)
        ws.print_across()
        if keep_left:
            ws.repeat_columns(0, keep_left - 1)
    if titles:
        ws.repeat_rows(0)
    organization = _code_text(page.organization or "organization not named")[:80]
    centre = _code_text(f"{page.title} — {sheet}")[:80]
    right = _code_text(f"As of {page.as_of}" if page.as_of else "")[:60]
    header = f"&L{organization}&C&B{centre}&B&R{right}"
    footer = f"&L{organization}&CPage &P of &N&R{right}"
    ws.set_header(header[:_HEADER_LIMIT], {"margin": 0.3})
    ws.set_footer(footer[:_HEADER_LIMIT], {"margin": 0.3})

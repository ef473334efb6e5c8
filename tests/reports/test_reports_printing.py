"""The workbook as a controller prints it (issues 22 and 42), read back with openpyxl: every
sheet landscape, its text at 8 pt or more (one page wide when that allows, else across pages),
its header row on every page, a header and footer naming the organization, the as-of date and
"Page x of y"; the Exceptions columns in reading order with kinds in words; Payments with its
exceptions first."""

from __future__ import annotations

import re
from pathlib import Path

import openpyxl
import pyarrow as pa
import pyarrow.parquet as pq
from openpyxl.utils import column_index_from_string, get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from fundpipe.reconcile import ReconcileResult
from fundpipe.reports.layout import MIN_PRINT_SCALE, PRINTABLE_WIDTH_PT, column_points, fit_scale
from fundpipe.reports.workbook import SheetSource, WorkbookSummary, write_workbook


def _set_width(stored: float) -> float:
    """A column's width as the writer set it: xlsxwriter stores it with Excel's padding (5
    pixels: 0.7109375 of a character) added."""
    return stored - 0.7109375


def _printed_scale(ws: Worksheet) -> int:
    """The print scale (percent) a spreadsheet prints `ws` at: its fit to one page wide shrinks
    the visible columns' widths onto a landscape Letter page, else its scale."""
    setup = ws.page_setup
    if ws.sheet_properties.pageSetUpPr is not None and ws.sheet_properties.pageSetUpPr.fitToPage:
        assert setup.fitToWidth in (None, 1), ws.title  # one page wide
        assert setup.fitToHeight in (0, "0"), ws.title  # as many pages down as it takes
        widths = []
        for dimension in ws.column_dimensions.values():
            if dimension.hidden or dimension.width is None:
                continue
            span = dimension.max - dimension.min + 1 if dimension.max else 1
            widths += [_set_width(dimension.width)] * span
        return fit_scale(widths)
    return int(setup.scale)


def test_every_sheet_prints_its_text_at_8_pt_or_more_with_titles_header_and_footer(
    known_result: ReconcileResult,
) -> None:
    """Issue 42: wide tabs printed at about half size (5 pt on Tie-out). Every sheet prints at
    a scale that keeps its 11 pt text at 8 pt or more: one page wide when that does, else across
    pages with its naming columns repeated at the left of each."""
    wb = openpyxl.load_workbook(known_result.workbook)
    split = []
    for ws in wb.worksheets:
        assert ws.page_setup.orientation == "landscape", ws.title
        scale = _printed_scale(ws)
        assert 11 * scale / 100 >= 8, (ws.title, scale)
        if ws.title != "Summary":
            assert ws.print_title_rows == "$1:$1", ws.title
        if not ws.sheet_properties.pageSetUpPr.fitToPage and ws.max_row > 2:
            split.append(ws.title)
            assert ws.print_title_cols, ws.title
            assert ws.print_title_cols.startswith("$A:"), ws.title
            assert ws.page_setup.pageOrder == "overThenDown", ws.title
        assert "org_demo" in ws.oddHeader.left.text, ws.title
        assert ws.title in ws.oddHeader.center.text
        assert ws.oddHeader.right.text == "As of 2026-11-30", ws.title
        assert ws.oddFooter.center.text == "Page &P of &N", ws.title
    # the widest tabs do not fit one page legibly: they print across pages
    assert {"Tie-out", "Roll-forward"} <= set(split)


def test_a_narrow_sheet_prints_one_page_wide_at_full_size(tmp_path: Path) -> None:
    table = pa.table({"vehicle": ["veh_a"], "amount_cents": pa.array([100], pa.int64())})
    pq.write_table(table, tmp_path / "narrow.parquet")
    path = tmp_path / "book.xlsx"
    write_workbook(path, WorkbookSummary(), [SheetSource("Narrow", tmp_path / "narrow.parquet")])
    ws = openpyxl.load_workbook(path)["Narrow"]
    assert ws.sheet_properties.pageSetUpPr.fitToPage
    assert _printed_scale(ws) == 100


def test_a_sheet_with_no_rows_says_so_under_its_header_on_one_page(tmp_path: Path) -> None:
    """Issue 42: no page prints a header with nothing under it, nor a Total of nothing."""
    table = pa.table(
        {
            "what": pa.array([], pa.string()),
            "amount_cents": pa.array([], pa.int64()),
            **{f"detail_{i}": pa.array([], pa.string()) for i in range(30)},
        }
    )
    pq.write_table(table, tmp_path / "empty.parquet")
    path = tmp_path / "book.xlsx"
    source = SheetSource("Empty", tmp_path / "empty.parquet", totals=True, empty="No exceptions.")
    write_workbook(path, WorkbookSummary(), [source])
    ws = openpyxl.load_workbook(path)["Empty"]
    rows = list(ws.iter_rows(values_only=True))
    assert rows[1][0] == "No exceptions."
    assert len(rows) == 2  # no Total row
    # printed: only the columns that fit one page at the smallest scale, the line under them
    area = ws.print_area[0] if isinstance(ws.print_area, list) else ws.print_area
    first, last = area.replace("$", "").split("!")[-1].split(":")
    assert first == "A1"
    assert last.endswith("2")
    fitted = column_index_from_string(last[:-1])
    widths = [
        _set_width(ws.column_dimensions[get_column_letter(i)].width) for i in range(1, fitted + 1)
    ]
    assert 1 < fitted < 32
    assert sum(column_points(w) for w in widths) * MIN_PRINT_SCALE / 100 <= PRINTABLE_WIDTH_PT


def test_summary_names_the_organization_and_has_a_sign_off_block(
    known_result: ReconcileResult,
) -> None:
    ws = openpyxl.load_workbook(known_result.workbook)["Summary"]
    assert ws["A1"].value == "Reconciliation — org_demo"
    assert ws["A2"].value == "As of 2026-11-30"
    facts = {r[0]: r[1:3] for r in ws.iter_rows(values_only=True) if r[0]}
    assert facts["Organization"][0] == "org_demo"
    # times as a person writes them on a signed page, no sync id, no relative path (issue 42)
    for label in ("Run at",):
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", facts[label][0]), facts[label]
    cells = [str(c) for r in ws.iter_rows(values_only=True) for c in r if c is not None]
    assert not [c for c in cells if "sync_" in c or re.search(r"T\d\d:\d\d:\d\d", c)]
    assert Path(facts["Parquet files"][0]).is_absolute()
    # no period close yet: blank lines to sign on, underlined
    assert not any(facts["Prepared by"])
    assert not any(facts["Reviewed by"])
    signed = next(r for r in ws.iter_rows() if r[0].value == "Reviewed by")
    assert signed[1].border.bottom.style == "thin"
    assert signed[2].border.bottom.style == "thin"


def test_exceptions_read_id_state_age_owner_what_amount_action_then_details_hash_last(
    known_result: ReconcileResult,
) -> None:
    ws = openpyxl.load_workbook(known_result.workbook)["Exceptions"]
    header = [c.value for c in ws[1]]
    assert header[:8] == [
        "Id",
        "State",
        "Age (days)",
        "Owner",
        "What",
        "Amount (USD)",
        "What to do",
        "Kind",
    ]
    # the object's id last: a file's is its 64-character hash
    assert header[-2:] == ["Object type", "Object id"]
    rows = [dict(zip(header, r, strict=True)) for r in ws.iter_rows(min_row=2, values_only=True)]
    kinds = {r["Kind"] for r in rows}
    # kinds in plain words, never the machine's code names
    assert "Sheet row not at the service" in kinds
    assert "Amount differs (sheet vs service)" in kinds
    assert not [k for k in kinds if "_" in str(k)]
    assert all(str(r["Id"]).startswith("EX-") for r in rows)
    assert {r["State"] for r in rows} == {"Open"}  # in words
    assert {r["Age (days)"] for r in rows} == {0}
    # the details after the reading columns are grouped and collapsed (left off the print)
    details = ws.column_dimensions["L"]
    assert details.outlineLevel == 1
    assert details.hidden
    assert not ws.column_dimensions["E"].hidden
    assert ws["E2"].alignment.wrap_text  # What wraps, its row tall enough for it
    rejected = next(r for r in rows if r["Kind"] == "Sheet file rejected")
    assert rejected["Object id"] == "h3"  # the known world's rejected file


def test_payments_list_exceptions_before_the_payments_that_match(
    known_result: ReconcileResult,
) -> None:
    ws = openpyxl.load_workbook(known_result.workbook)["Payments"]
    header = [c.value for c in ws[1]]
    matches = [r[header.index("Match")] for r in ws.iter_rows(min_row=2, values_only=True)]
    assert matches[-1] == "Total"  # the last row foots the sheet's money
    matches = matches[:-1]
    ok = "Matches"  # in words, as every Match
    assert ok in matches
    assert not [m for m in matches if "_" in str(m)], matches
    first_ok = matches.index(ok)
    assert all(m == ok for m in matches[first_ok:]), matches
    assert first_ok == len([m for m in matches if m != ok]) > 0


def test_a_sheet_continued_past_the_row_limit_prints_each_part_with_its_titles(
    tmp_path: Path,
) -> None:
    source = tmp_path / "p.parquet"
    pq.write_table(pa.table({"payment_id": [f"dpmt_{i}" for i in range(5)]}), source)
    path = tmp_path / "w.xlsx"
    names = write_workbook(
        path,
        WorkbookSummary(
            organization="Acme & Co",
            as_of="2026-12-31",
            chart_sheet=None,
            prepared_by="Ana Preparer",
            reviewed_by="Raj Reviewer",
        ),
        [SheetSource("Payments", source)],
        max_rows=3,
    )
    wb = openpyxl.load_workbook(path)
    signed = {r[0]: r[1] for r in wb["Summary"].iter_rows(values_only=True) if r[0]}
    assert signed["Prepared by"] == "Ana Preparer"
    assert signed["Reviewed by"] == "Raj Reviewer"
    for name in names[1:]:
        ws = wb[name]
        assert ws.print_title_rows == "$1:$1"
        # an ampersand in the organization's name is printed, not read as a header code
        assert ws.oddHeader.left.text == "Acme && Co"
        assert ws.oddHeader.right.text == "As of 2026-12-31"


def test_summary_shows_the_dollar_tie_out_and_the_tie_out_sheet_foots_and_cross_foots(
    known_result: ReconcileResult,
) -> None:
    wb = openpyxl.load_workbook(known_result.workbook)
    lines = {r[0]: r[1:3] for r in wb["Summary"].iter_rows(values_only=True) if r[0]}
    # the known world (worlds.warehouse): sheets $550 + $160 + $7.77; service dst_1 $500
    # disbursed, dst_2 $150 + $50 staged and $10 failed
    assert lines["Per the sheets"] == (5, 717.77)
    assert lines["At the service"] == (5, 710)
    assert lines["  Disbursed"] == (2, 500)
    assert lines["  Failed (still owed unless paid again)"] == (1, 10)
    assert lines["  Cancelled"] == (0, 0)
    assert lines["  Outstanding (staged)"] == (2, 200)
    assert lines["Disbursed + failed + cancelled + outstanding"] == (5, 710)
    assert lines["Difference, service − sheets"] == (0, -7.77)
    assert lines["Distributions not tying out"][0] == 3

    ws = wb["Tie-out"]
    header = [c.value for c in ws[1]]
    rows = [dict(zip(header, r, strict=True)) for r in ws.iter_rows(min_row=2, values_only=True)]
    *distributions, total = rows
    assert total["Distribution"] == "Total"
    money = [h for h in header if h and h.endswith("(USD)")]
    counts = [h for h in header if h and h.endswith("payments")]
    for column in money + counts:  # the Total row foots
        assert round(sum(r[column] for r in distributions), 2) == round(total[column], 2), column
    for r in rows:  # and every row cross-foots
        parts = ("Disbursed", "Failed", "Cancelled", "Outstanding")
        assert round(sum(r[f"{p} (USD)"] for p in parts), 2) == r["Service (USD)"]
        assert sum(r[f"{p} payments"] for p in parts) == r["Service payments"]
        assert r["Difference (USD)"] == round(r["Service (USD)"] - r["Sheet (USD)"], 2)
    by_ref = {r["Distribution reference"]: r for r in distributions}
    assert by_ref["REF-1"]["Sheet (USD)"] == 550
    assert by_ref["REF-1"]["Disbursed (USD)"] == 500
    assert by_ref["'-2+3"]["Outstanding payments"] == 2
    assert by_ref["'-2+3"]["Days past due"] == 0
    assert not any(r["Ties out"] for r in rows)


def test_the_sign_off_names_reach_the_summary_sheet(
    known_result: ReconcileResult, tmp_path: Path
) -> None:
    from fundpipe.reconcile.summary import workbook_summary

    summary = workbook_summary(
        known_result.summary, known_result.out_dir, prepared_by="Ana", reviewed_by=None
    )
    path = tmp_path / "signed.xlsx"
    write_workbook(path, summary, [])
    rows = {r[0]: r[1] for r in openpyxl.load_workbook(path)["Summary"].iter_rows(values_only=True)}
    assert rows["Prepared by"] == "Ana"
    assert not rows["Reviewed by"]  # a blank line, to sign on
    assert rows["Organization"] == "org_demo"


def test_the_shortfall_line_is_red_only_when_a_vehicle_is_short(
    known_result: ReconcileResult, tmp_path: Path
) -> None:
    from fundpipe.reconcile.summary import workbook_summary

    short = openpyxl.load_workbook(known_result.workbook)["Summary"]["E2"]
    assert short.value == "1 vehicle(s) short of funds"
    assert short.font.color is not None
    assert short.font.color.rgb.endswith("C00000")
    # the same night with every vehicle funded
    funding = pq.read_table(known_result.parquet["funding"])
    zero = pa.array([0] * funding.num_rows, funding.schema.field("shortfall_cents").type)
    funded = tmp_path / "funding.parquet"
    column = funding.schema.get_field_index("shortfall_cents")
    pq.write_table(funding.set_column(column, "shortfall_cents", zero), funded)
    summary = workbook_summary(known_result.summary, known_result.out_dir)
    path = tmp_path / "funded.xlsx"
    write_workbook(path, summary, [SheetSource("Funding", funded)])
    fine = openpyxl.load_workbook(path)["Summary"]["E2"]
    assert fine.value == "No vehicle is short of funds."
    assert fine.font.b
    assert fine.font.color is None or not str(fine.font.color.rgb).endswith("C00000")


def test_a_true_false_column_prints_yes_or_no_in_every_row(
    known_result: ReconcileResult,
) -> None:
    """LibreOffice printed a general-format boolean as 1 in some rows and TRUE in others: the
    column carries a format that reads Yes / No, in words (issue 42), wherever the workbook is
    opened."""
    ws = openpyxl.load_workbook(known_result.workbook)["Tie-out"]
    column = [c.value for c in ws[1]].index("Ties out")
    cells = [row[column] for row in ws.iter_rows(min_row=2)]
    assert cells
    assert {type(c.value) for c in cells} == {bool}
    assert {c.number_format for c in cells} == {'"Yes";"Yes";"No"'}


def test_the_tie_out_total_row_prints_bold_its_figures_under_a_rule(
    known_result: ReconcileResult,
) -> None:
    ws = openpyxl.load_workbook(known_result.workbook)["Tie-out"]
    header = [c.value for c in ws[1]]
    # the flag itself is not shown
    assert not [h for h in header if h and "total" in h.lower()]
    *distributions, total = list(ws.iter_rows(min_row=2))
    assert total[0].value == "Total"
    assert total[0].font.b
    service = header.index("Service (USD)")
    assert total[service].font.b
    assert total[service].border.top.style == "thin"
    assert total[service].number_format == distributions[0][service].number_format
    ties = header.index("Ties out")
    assert total[ties].number_format == '"Yes";"Yes";"No"'
    for row in distributions:
        assert not row[0].font.b
        assert not row[service].font.b
        assert row[service].border.top.style is None

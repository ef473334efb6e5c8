"""A file is accepted whole or rejected whole, with errors an analyst can act on."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import xlsxwriter
from rich.console import Console

from fundpipe.app.cli.render import render_validation
from fundpipe.app.outcomes import validation_dict
from fundpipe.validate.files import FileReport, validate_exit_code, validate_files
from worlds.sheets import HEADER, clean_rows

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"

ROSTER_HEADER = [
    "Legal Name", "Entity Type", "Entity Reference", "Contact Name", "Email",
    "Payment Type", "Routing Number", "Account Number",
]  # fmt: skip
ROSTER_ROW = [
    "Harbor Family Trust", "trust", "NEW-E1", "Ana Harbor", "ana@example.com",
    "ach", "021000021", "000123456789",
]  # fmt: skip


def only(path: Path, **kwargs: object) -> FileReport:
    [report] = validate_files([path], **kwargs)  # type: ignore[arg-type]
    return report


def cells(report: FileReport) -> list[tuple[int | None, str | None, str]]:
    return [(e.row, e.column, e.check) for e in report.errors]


def test_clean_samples_are_valid_and_reference_the_demo_world() -> None:
    paths = sorted(p for p in SAMPLES.iterdir() if p.suffix in {".csv", ".xlsx", ".parquet"})
    reports = validate_files(paths)
    assert [r.valid for r in reports] == [True] * len(paths), [r.errors for r in reports]
    payments = [r.distributions for r in reports if r.distributions is not None]
    total = sum(int(p["amount_cents"].sum()) for p in payments)
    assert sum(len(p) for p in payments) == 20
    assert total < 750_000_00
    assert {v for p in payments for v in p["vehicle"]} == {"veh_demo1", "veh_demo2", "veh_demo3"}
    assert all(d.startswith("2026-12-") for p in payments for d in p["distribution_date"])
    # NEW-E* refs come from the roster in the same drop; only DEMO-E1 is left to the service
    warned = {w.value for r in reports for w in r.warnings if w.check == "entity_resolvable"}
    assert warned == {"DEMO-E1"}


def test_canonical_payment_columns_match_the_architecture_contract() -> None:
    [report] = validate_files([SAMPLES / "distributions_q4.csv"])
    assert report.distributions is not None
    assert list(report.distributions.columns) == [
        "source_file", "sheet", "row", "distribution_name", "vehicle", "external_reference",
        "distribution_date", "distribution_timezone", "entity", "entity_is_ref", "amount_cents",
        "currency", "distribution_date_override", "notify",
    ]  # fmt: skip
    first = report.distributions.iloc[0]
    assert first["row"] == 2
    assert first["distribution_date"] == "2026-12-15T09:00:00-05:00"
    assert str(report.distributions["amount_cents"].dtype) == "int64"


BROKEN = json.loads((SAMPLES / "broken" / "expected.json").read_text())


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_each_broken_sample_is_rejected_for_its_own_reason(name: str) -> None:
    report = only(SAMPLES / "broken" / name)
    assert not report.valid
    assert BROKEN[name]["check"] in {e.check for e in report.errors}
    assert report.distributions is None


def test_headers_match_ignoring_case_spaces_punctuation_and_aliases(
    write_csv: Callable[..., Path],
) -> None:
    header = [
        "DISTRIBUTION NAME",
        "vehicle_id",
        "Distribution Ref.",
        "payment-date",
        "time zone",
        "Entity",
        "amount usd",
        "Desk Notes",
    ]
    rows = [[*r, "note"] for r in clean_rows()]
    report = only(write_csv(rows, header=header))
    assert report.valid, report.errors
    assert [(w.row, w.column, w.check) for w in report.warnings] == [
        (1, "Desk Notes", "unknown_column")
    ]


def test_missing_required_columns_are_named(write_csv: Callable[..., Path]) -> None:
    report = only(write_csv([r[:5] for r in clean_rows()], header=HEADER[:5]))
    assert cells(report) == [(None, None, "required_columns")]
    assert "entity" in report.errors[0].reason
    assert "amount" in report.errors[0].reason


def test_two_headers_for_one_column_are_rejected(write_csv: Callable[..., Path]) -> None:
    report = only(write_csv([[*r, "5"] for r in clean_rows()], header=[*HEADER, "Payment Amount"]))
    assert [e.check for e in report.errors] == ["duplicate_columns"]
    assert "'Amount ($)' (G), 'Payment Amount' (H) all mean amount" in report.errors[0].reason


def test_errors_name_the_cell_as_the_analyst_wrote_it(write_csv: Callable[..., Path]) -> None:
    rows = clean_rows()
    rows[1][6] = "(1.00)"
    rows[2][1] = "veh-demo1"
    report = only(write_csv(rows))
    assert {(e.row, e.column, e.check) for e in report.errors} >= {
        (3, "Amount ($)", "amount_negative"),
        (4, "Vehicle", "vehicle_id_format"),
    }
    negative = next(e for e in report.errors if e.check == "amount_negative")
    assert negative.value == "(1.00)"
    assert "negative" in negative.reason


def test_rows_of_one_distribution_must_agree(write_csv: Callable[..., Path]) -> None:
    rows = clean_rows()
    rows[2][3] = "2026-12-16 09:00"
    report = only(write_csv(rows))
    assert cells(report) == [(4, "Payment Date", "distribution_rows_agree")]


def test_an_entity_is_paid_once_per_distribution(write_csv: Callable[..., Path]) -> None:
    rows = clean_rows()
    rows[2][5] = "ent_demo1"
    assert cells(only(write_csv(rows))) == [(4, "Entity ID", "entity_once_per_distribution")]


def test_more_than_a_thousand_payments_is_rejected(write_csv: Callable[..., Path]) -> None:
    rows = [
        ["Big", "veh_demo1", "BIG-1", "2026-12-15", "UTC", f"REF-{i}", "1.00"] for i in range(1001)
    ]
    report = only(write_csv(rows))
    assert cells(report) == [(None, "External Reference", "payments_per_distribution")]


def test_entities_resolve_against_the_drop_and_the_service(
    tmp_path: Path, write_csv: Callable[..., Path]
) -> None:
    rows = clean_rows()
    rows[0][5] = "NEW-E1"
    rows[1][5] = "DEMO-E2"
    sheet = write_csv(rows)
    roster = _roster_xlsx(tmp_path / "roster.xlsx", [ROSTER_ROW])
    warned = validate_files([sheet, roster])
    assert [r.valid for r in warned] == [True, True]
    assert [(w.row, w.value) for w in warned[0].warnings] == [(3, "DEMO-E2")]
    known = validate_files([sheet, roster], known_entity_refs={"DEMO-E2"})
    assert [r.valid for r in known] == [True, True]
    assert known[0].warnings == []
    strict = validate_files([sheet], known_entity_refs={"DEMO-E2"})
    assert cells(strict[0]) == [(2, "Entity ID", "entity_resolvable")]
    assert strict[0].distributions is None


def _roster_xlsx(path: Path, rows: list[list[str]], *, with_distribution: bool = False) -> Path:
    workbook = xlsxwriter.Workbook(str(path))
    ws = workbook.add_worksheet("Roster")
    ws.write_row(0, 0, ROSTER_HEADER)
    for r, row in enumerate(rows, start=1):
        for c, value in enumerate(row):
            ws.write_string(r, c, value)
    if with_distribution:
        dist = workbook.add_worksheet("Distribution")
        dist.write_row(0, 0, HEADER)
        for r, row in enumerate(clean_rows(), start=1):
            dist.write_row(r, 0, [*row[:5], "NEW-E1" if r == 1 else row[5], row[6]])
    workbook.close()
    return path


def test_one_xlsx_may_carry_both_templates(tmp_path: Path) -> None:
    report = only(_roster_xlsx(tmp_path / "both.xlsx", [ROSTER_ROW], with_distribution=True))
    assert report.valid, report.errors
    assert report.templates == {"Roster": "roster", "Distribution": "distribution"}
    assert report.distributions is not None
    assert len(report.distributions) == 3
    assert report.entities is not None
    assert report.entities["external_reference"].tolist() == ["NEW-E1"]
    assert report.warnings == []


def test_account_numbers_are_masked_everywhere_but_the_secret_column(tmp_path: Path) -> None:
    good = only(_roster_xlsx(tmp_path / "good.xlsx", [ROSTER_ROW]))
    assert good.payment_instructions is not None
    assert good.payment_instructions["account_number_secret"].tolist() == ["000123456789"]
    assert good.payment_instructions["account_number_last_four"].tolist() == ["6789"]
    assert "000123456789" not in repr(good)

    bad_row = [*ROSTER_ROW[:6], "021000022", "1-2x"]  # bad checksum, bad account number
    bad = only(_roster_xlsx(tmp_path / "bad.xlsx", [bad_row, [*ROSTER_ROW[:7], "99887766554433"]]))
    assert {(e.row, e.column, e.check) for e in bad.errors} == {
        (2, "Routing Number", "routing_number_format"),
        (2, "Account Number", "account_number_format"),
    }
    dumped = json.dumps(validation_dict([bad])) + repr(bad) + render_text([bad])
    assert "1-2x" not in dumped
    assert "12x" not in dumped
    assert "99887766554433" not in dumped
    assert next(e for e in bad.errors if e.column == "Account Number").value == "****"


def render_text(reports: list[FileReport]) -> str:
    console = Console(record=True, width=200)
    render_validation(reports, console)
    return console.export_text()


def test_roster_rows_of_one_entity_must_agree_and_be_complete(tmp_path: Path) -> None:
    second = [ROSTER_ROW[0], "llc", "NEW-E1", "Ben", "", "", "", ""]
    report = only(_roster_xlsx(tmp_path / "r.xlsx", [ROSTER_ROW, second]))
    assert {(e.row, e.column, e.check) for e in report.errors} == {
        (3, "Entity Type", "entity_rows_agree"),
        (3, "Email", "contact_complete"),
    }


def test_json_rendering_and_exit_codes(tmp_path: Path, write_csv: Callable[..., Path]) -> None:
    good = write_csv(name="good.csv")
    rows = clean_rows()
    rows[0][6] = "abc"
    bad = write_csv(rows, name="bad.csv")
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"\x00\x01\x02" * 100)
    reports = validate_files([good, bad])
    assert validate_exit_code(reports) == 1
    assert validate_exit_code(reports[:1]) == 0
    assert validate_exit_code(validate_files([good, bad, binary])) == 2
    doc = validation_dict(reports)
    assert [set(f) for f in doc["files"]] == [
        {"file", "sheet", "valid", "rows", "errors", "warnings", "grouped"}
    ] * 2
    assert doc["files"][1]["errors"] == [
        {
            "file": str(bad),
            "sheet": None,
            "row": 2,
            "column": "Amount ($)",
            "column_letter": "G",
            "value": "abc",
            "check": "amount_not_a_number",
            "reason": "the amount is not a number",
        }
    ]
    assert doc["files"][1]["grouped"] == [
        {
            **doc["files"][1]["errors"][0],
            "severity": "error",
            "rows": [2],
            "rows_text": "2",
            "count": 1,
        }
    ]
    json.dumps(doc)  # JSON-ready
    text = render_text(reports)
    assert "rejected" in text
    assert "amount_not_a_number" in text


def test_every_error_is_reported_at_once_entity_references_included(
    write_csv: Callable[..., Path],
) -> None:
    # issue 13: the entity-resolution check was skipped when the file had other errors, so the
    # analyst fixed the amount, dropped the file again, and only then learnt of the entity
    rows = clean_rows()
    rows[0][5] = "NOBODY-1"
    rows[1][6] = "abc"
    report = only(write_csv(rows), known_entity_refs={"DEMO-E2"})
    found = cells(report)
    assert (2, "Entity ID", "entity_resolvable") in found
    assert any(row == 3 and column == "Amount ($)" for row, column, _ in found)
    assert report.distributions is None


def test_the_validate_table_reads_like_the_error_report(write_csv: Callable[..., Path]) -> None:
    rows = clean_rows()
    for row in rows:
        row[6] = "ten"
    text = render_text([only(write_csv(rows, name="bad.csv"))])
    [line] = [line for line in text.splitlines() if "amount_not_a_number" in line]
    assert " 2–4 " in line  # the three rows, one line
    assert "Amount ($) (G)" in line  # the column's letter beside its name
    assert "sheet" not in text  # a CSV has no sheets: no empty column


def test_the_validate_table_keeps_check_names_whole_at_80_columns() -> None:
    broken = sorted(p for p in (SAMPLES / "broken").iterdir() if p.suffix in {".csv", ".xlsx"})
    reports = validate_files(broken)
    console = Console(record=True, width=80)
    render_validation(reports, console)
    text = console.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    checks = {issue.check for report in reports for issue in report.errors}
    assert "amount_negative" in checks
    for check in checks:
        assert check in text, check
    # the counts agree with their nouns: "3 rows, 1 error, 0 warnings"
    assert "rejected, 3 rows, 1 error, 0 warnings" in " ".join(text.split())
    assert " 1 errors" not in text


def test_a_reason_names_the_column_as_the_analyst_wrote_it(
    write_csv: Callable[..., Path],
) -> None:
    rows = clean_rows()
    rows[1][4] = "Europe/London"  # one row of a distribution in another zone
    report = only(write_csv(rows, name="zones.csv"))
    [zone] = [e for e in report.errors if e.column == "Timezone"]
    assert "disagree on Timezone (column E)" in zone.reason
    assert all("distribution_" not in e.reason for e in report.errors)

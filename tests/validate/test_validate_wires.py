"""Wire instructions in the roster: present by type, well formed, and never shown in full."""

from __future__ import annotations

from pathlib import Path

from fundpipe.plan import build_plan, display_body
from fundpipe.plan._model import FileInput
from fundpipe.validate.files import validate_files
from worlds.submit import DEMO_STATE

HEADER = (
    "entity_name,entity_type,entity_external_reference,payment_type,routing_number,"
    "account_number,swift_code,intermediary_bank_name,intermediary_swift_code,"
    "beneficiary_address,originator_to_beneficiary"
)
SWIFT = "DEUTDEFF500"
ADDRESS = "12 Quai du Mont-Blanc, Geneva"
GOOD = (
    f"Alpine Holdings,corporation,NEW-W1,international_wire,,CH9300762011623852957,{SWIFT},"
    f'Example Correspondent,CHASUS33,"{ADDRESS}",Q4 distribution;Alpine fund'
)


def _roster(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "roster.csv"
    path.write_text("\n".join([HEADER, *rows]) + "\n", encoding="utf-8")
    return path


def test_an_international_wire_needs_its_swift_code_and_address(tmp_path: Path) -> None:
    (report,) = validate_files(
        [_roster(tmp_path, "Alpine Holdings,corporation,NEW-W1,international_wire,,12345678,,,,,")]
    )
    assert not report.valid
    found = {(i.row, i.column, i.check) for i in report.errors}
    assert (2, "swift_code", "wire_complete") in found
    assert (2, "beneficiary_address", "wire_complete") in found


def test_a_malformed_swift_code_is_a_row_error_shown_masked(tmp_path: Path) -> None:
    bad = GOOD.replace(SWIFT, "DEUT-DE-FF5009")
    (report,) = validate_files([_roster(tmp_path, bad)])
    (issue,) = [i for i in report.errors if i.column == "swift_code"]
    assert (issue.row, issue.check) == (2, "swift_code_format")
    assert issue.value is not None
    assert issue.value.startswith("****")
    assert "DEUTDEFF" not in issue.value


def test_a_complete_wire_is_planned_and_shown_masked(tmp_path: Path) -> None:
    (report,) = validate_files([_roster(tmp_path, GOOD)])
    assert report.valid, report.errors
    plan = build_plan(
        [
            FileInput(
                "h1",
                "roster.csv",
                None,
                entities=report.entities,
                payment_instructions=report.payment_instructions,
            )
        ],
        DEMO_STATE,
    )
    (request,) = plan.phase("payment_instructions")
    (instruction,) = request.body[0]["payment_instructions"]
    assert instruction["swift_code"] == SWIFT
    assert instruction["beneficiary_address"] == ADDRESS
    assert instruction["intermediary_swift_code"] == "CHASUS33"
    shown = str(display_body(list(request.body)))
    for secret in (SWIFT, ADDRESS, "CHASUS33", "Alpine fund", "CH9300762011623852957"):
        assert secret not in shown


def test_a_domestic_wire_needs_no_swift_code(tmp_path: Path) -> None:
    row = "Harbor Trust,trust,NEW-W2,domestic_wire,021000021,000123456789,,,,,"
    (report,) = validate_files([_roster(tmp_path, row)])
    assert report.valid, report.errors


def test_a_roster_whose_routing_column_is_empty_is_not_rejected(tmp_path: Path) -> None:
    row = "Plain LLC,llc,NEW-W3,,,,,,,,"
    (report,) = validate_files([_roster(tmp_path, row)])
    assert report.valid, report.errors


def test_too_many_originator_lines_are_a_row_error(tmp_path: Path) -> None:
    row = GOOD.replace("Q4 distribution;Alpine fund", "a;b;c;d;e")
    (report,) = validate_files([_roster(tmp_path, row)])
    assert [(i.column, i.check) for i in report.errors] == [
        ("originator_to_beneficiary", "wire_lines")
    ]

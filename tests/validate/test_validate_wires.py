"""Wire instructions in the roster: the public description's fields, present by type, well
formed, and the sensitive ones never shown in full."""

from __future__ import annotations

from pathlib import Path

import openpyxl

from fundpipe.plan import build_plan, display_body
from fundpipe.plan._model import FileInput
from fundpipe.validate.files import validate_files
from worlds.submit import DEMO_STATE

HEADER = (
    "entity_name,entity_type,entity_external_reference,payment_type,routing_number,"
    "account_number,swift_code,Intermediary Party Name,Intermediary Party SWIFT Code,"
    "Beneficiary Street 1,Beneficiary Street 2,Beneficiary City,Beneficiary State,"
    "Beneficiary Postal Code,Beneficiary Country Code,"
    "Originator to Beneficiary Line 1,Originator to Beneficiary Line 2,"
    "Originator to Beneficiary Line 3"
)
SWIFT = "DEUTDEFF500"
GOOD = (
    f"Alpine Holdings,corporation,NEW-W1,international_wire,,CH9300762011623852957,{SWIFT},"
    "Example Correspondent,CHASUS33,12 Quai du Mont-Blanc,,Geneva,,1201,ch,"
    "Q4 distribution,Alpine fund,"
)
DOMESTIC = (
    "Harbor Trust,trust,NEW-W2,domestic_wire,021000021,000123456789,,,,"
    "100 Main St,Suite 5,Boston,MA,02110,US,,,"
)
EMPTY_WIRE = ",,,,,,,,,,,"


def _roster(tmp_path: Path, *rows: str, header: str = HEADER) -> Path:
    path = tmp_path / "roster.csv"
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def _plan(report):  # type: ignore[no-untyped-def]
    return build_plan(
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


def test_an_international_wire_needs_its_swift_code_and_address(tmp_path: Path) -> None:
    row = "Alpine Holdings,corporation,NEW-W1,international_wire,,12345678,," + EMPTY_WIRE + ",,,"
    (report,) = validate_files([_roster(tmp_path, row)])
    assert not report.valid
    found = {(i.row, i.column, i.check) for i in report.errors}
    assert (2, "swift_code", "wire_complete") in found
    for header in ("Beneficiary Street 1", "Beneficiary City", "Beneficiary Country Code"):
        assert (2, header, "address_complete") in found


def test_a_malformed_swift_code_is_a_row_error_shown_masked(tmp_path: Path) -> None:
    bad = GOOD.replace(SWIFT, "DEUT-DE-FF5009")
    (report,) = validate_files([_roster(tmp_path, bad)])
    (issue,) = [i for i in report.errors if i.column == "swift_code"]
    assert (issue.row, issue.check) == (2, "swift_code_format")
    assert issue.value is not None
    assert issue.value.startswith("****")
    assert "DEUTDEFF" not in issue.value


def test_a_complete_international_wire_is_planned_with_the_public_fields(tmp_path: Path) -> None:
    (report,) = validate_files([_roster(tmp_path, GOOD)])
    assert report.valid, report.errors
    (request,) = _plan(report).phase("payment_instructions")
    (instruction,) = request.body[0]["payment_instructions"]
    assert instruction == {
        "type": "international_wire",
        "account_number": "CH9300762011623852957",
        "swift_code": SWIFT,
        "intermediary_party_name": "Example Correspondent",
        "intermediary_party_swift_code": "CHASUS33",
        "originator_to_beneficiary_instructions_line1": "Q4 distribution",
        "originator_to_beneficiary_instructions_line2": "Alpine fund",
        "address": {
            "street1": "12 Quai du Mont-Blanc",
            "city": "Geneva",
            "postal_code": "1201",
            "country_code": "CH",
        },
    }
    shown = str(display_body(list(request.body)))
    for secret in (SWIFT, "CHASUS33", "Alpine fund", "Example Correspondent", "623852957"):
        assert secret not in shown
    assert "12 Quai du Mont-Blanc" in shown  # an address is not a secret


def test_a_domestic_wire_takes_its_address_and_no_swift_code(tmp_path: Path) -> None:
    (report,) = validate_files([_roster(tmp_path, DOMESTIC)])
    assert report.valid, report.errors
    (request,) = _plan(report).phase("payment_instructions")
    (instruction,) = request.body[0]["payment_instructions"]
    assert instruction["routing_number"] == "021000021"
    assert instruction["address"] == {
        "street1": "100 Main St",
        "street2": "Suite 5",
        "city": "Boston",
        "state": "MA",
        "postal_code": "02110",
        "country_code": "US",
    }
    with_swift = DOMESTIC.replace("000123456789,,", f"000123456789,{SWIFT},")
    (report,) = validate_files([_roster(tmp_path, with_swift)])
    assert [(i.column, i.check) for i in report.errors] == [("swift_code", "wire_fields")]


def test_wire_columns_on_an_ach_row_are_a_row_error(tmp_path: Path) -> None:
    row = DOMESTIC.replace("domestic_wire", "ach")
    (report,) = validate_files([_roster(tmp_path, row)])
    assert {(i.row, i.column, i.check) for i in report.errors} == {
        (2, header, "wire_fields")
        for header in (
            "Beneficiary Street 1",
            "Beneficiary Street 2",
            "Beneficiary City",
            "Beneficiary State",
            "Beneficiary Postal Code",
            "Beneficiary Country Code",
        )
    }


def test_a_bad_address_part_names_its_column_and_value(tmp_path: Path) -> None:
    row = DOMESTIC.replace("100 Main St", "PO Box 12").replace("02110", "2110")
    (report,) = validate_files([_roster(tmp_path, row.replace(",US,", ",USA,"))])
    assert {(i.column, i.value, i.check) for i in report.errors} == {
        ("Beneficiary Street 1", "PO Box 12", "address_format"),
        ("Beneficiary Country Code", "USA", "country_code_format"),
    }
    (report,) = validate_files([_roster(tmp_path, row)])
    assert {(i.column, i.value, i.check) for i in report.errors} == {
        ("Beneficiary Street 1", "PO Box 12", "address_format"),
        ("Beneficiary Postal Code", "2110", "address_format"),
    }


def test_a_one_line_address_is_a_row_error_naming_the_columns_to_use(tmp_path: Path) -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Roster"
    sheet.append(
        [
            "Legal Name",
            "Entity Type",
            "Entity Reference",
            "Payment Type",
            "Account Number",
            "SWIFT Code",
            "Beneficiary Address",
        ]
    )
    address = "12 Quai du Mont-Blanc, Geneva"
    sheet.append(
        [
            "Alpine Holdings",
            "corporation",
            "NEW-W1",
            "international_wire",
            "CH9300762011623852957",
            SWIFT,
            address,
        ]
    )
    path = tmp_path / "roster.xlsx"
    workbook.save(path)
    (report,) = validate_files([path])
    (issue,) = report.errors
    assert (issue.file, issue.sheet, issue.row, issue.letter) == (str(path), "Roster", 2, "G")
    assert (issue.column, issue.value, issue.check) == (
        "Beneficiary Address",
        address,
        "address_in_parts",
    )
    for column in ("Beneficiary Street 1", "Beneficiary City", "Beneficiary Country Code"):
        assert column in issue.reason


def test_older_wire_columns_are_read_into_the_public_fields(tmp_path: Path) -> None:
    header = (
        "entity_name,entity_type,entity_external_reference,payment_type,account_number,"
        "swift_code,intermediary_bank_name,intermediary_swift_code,originator_to_beneficiary,"
        "Street 1,City,Country Code"
    )
    row = (
        "Alpine Holdings,corporation,NEW-W1,international_wire,CH9300762011623852957,"
        f"{SWIFT},Example Correspondent,CHASUS33,Q4 distribution; Alpine fund;Ref 7,"
        "12 Quai du Mont-Blanc,Geneva,CH"
    )
    (report,) = validate_files([_roster(tmp_path, row, header=header)])
    assert report.valid, report.errors
    (request,) = _plan(report).phase("payment_instructions")
    (instruction,) = request.body[0]["payment_instructions"]
    assert instruction["intermediary_party_name"] == "Example Correspondent"
    assert instruction["intermediary_party_swift_code"] == "CHASUS33"
    assert [instruction[f"originator_to_beneficiary_instructions_line{n}"] for n in (1, 2, 3)] == [
        "Q4 distribution",
        "Alpine fund",
        "Ref 7",
    ]
    assert "originator_to_beneficiary" not in instruction

    (report,) = validate_files(
        [_roster(tmp_path, row.replace(";Ref 7", ";Ref 7;more"), header=header)]
    )
    assert [(i.column, i.check) for i in report.errors] == [
        ("originator_to_beneficiary", "wire_lines")
    ]
    long_line = row.replace("Alpine fund", "x" * 36)
    (report,) = validate_files([_roster(tmp_path, long_line, header=header)])
    assert [(i.column, i.check) for i in report.errors] == [
        ("originator_to_beneficiary", "wire_lines")
    ]


def test_a_line_longer_than_35_characters_is_a_row_error(tmp_path: Path) -> None:
    row = GOOD.replace("Alpine fund", "x" * 36)
    (report,) = validate_files([_roster(tmp_path, row)])
    assert [(i.column, i.check) for i in report.errors] == [
        ("Originator to Beneficiary Line 2", "wire_lines")
    ]


def test_a_roster_whose_routing_column_is_empty_is_not_rejected(tmp_path: Path) -> None:
    row = "Plain LLC,llc,NEW-W3,,,," + EMPTY_WIRE + ",,,"
    (report,) = validate_files([_roster(tmp_path, row)])
    assert report.valid, report.errors

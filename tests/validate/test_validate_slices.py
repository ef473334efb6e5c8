"""A sheet checked a slice of rows at a time reports exactly what it would checked whole."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fundpipe.validate import distribution
from fundpipe.validate.files import FileReport, validate_files

HEADER = [
    "Distribution Name", "Vehicle", "External Reference", "Payment Date", "Timezone",
    "Entity ID", "Amount ($)",
]  # fmt: skip


def _rows() -> list[list[str]]:
    """Two distributions interleaved over eleven rows, with bad cells, a date read by its
    column's order, rows that disagree and an entity twice, spread across slices of three."""
    rows = []
    for i in range(11):
        ref = f"D{i % 2}"
        rows.append(
            [
                f"Dist {ref}",
                "veh_demo1",
                ref,
                "03/04/2027" if i < 9 else "25/04/2027",
                "Europe/London",
                f"ent_demo{i // 2}",
                f"{100 + i}.00",
            ]
        )
    rows[1][6] = "(5.00)"  # negative amount
    rows[4][1] = "veh-x"  # vehicle id
    rows[7][0] = "Dist other"  # disagrees with D1's other rows, in another slice
    rows[8][5] = rows[2][5]  # the same entity twice in D0, two slices apart
    rows[10][3] = "2027-04-26"  # disagrees on the date
    return rows


def _report(path: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]], int | None]:
    [report] = validate_files([path])
    return _shape(report)


def _shape(
    report: FileReport,
) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]], int | None]:
    fields = ("row", "column", "letter", "value", "check", "reason")
    errors = [tuple(getattr(e, f) for f in fields) for e in report.errors]
    warnings = [tuple(getattr(w, f) for f in fields) for w in report.warnings]
    return errors, warnings, report.read_cents


def test_slices_report_every_cell_as_the_whole_sheet_does(
    write_csv: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_csv(_rows(), header=HEADER)
    whole = _report(path)
    monkeypatch.setattr(distribution, "CHUNK_ROWS", 3)
    sliced = _report(path)
    assert sliced == whole
    errors, warnings, _ = sliced
    checks = {(row, check) for row, _, _, _, check, _ in errors}
    assert {
        (3, "amount_negative"),
        (6, "vehicle_id_format"),
        (9, "distribution_rows_agree"),
        (10, "entity_once_per_distribution"),
        (12, "distribution_rows_agree"),
    } <= checks
    assert [w[4] for w in warnings] == ["date_order_from_column"]


def test_a_valid_sheet_in_slices_gives_the_same_payments(
    write_csv: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [[f"Dist {i // 4}", "veh_demo1", f"D{i // 4}", "2026-12-15 09:00", "", f"ent_e{i}",
             f"${i},000.5"] for i in range(1, 10)]  # fmt: skip
    path = write_csv(rows, header=HEADER)
    [whole] = validate_files([path])
    monkeypatch.setattr(distribution, "CHUNK_ROWS", 2)
    [sliced] = validate_files([path])
    assert whole.valid
    assert sliced.valid
    assert whole.distributions is not None
    assert sliced.distributions is not None
    assert sliced.distributions.equals(whole.distributions)
    assert list(sliced.distributions["amount_cents"]) == [i * 100_000 + 50 for i in range(1, 10)]
    assert set(sliced.distributions["distribution_timezone"]) == {"UTC"}


def test_a_blank_currency_is_read_as_usd_in_every_slice(
    write_csv: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [["Dist 1", "veh_demo1", "D1", "2026-12-15 09:00", "", f"ent_e{i}", "10.00", currency]
            for i, currency in enumerate(["", "usd", " USD ", "", "USD"])]  # fmt: skip
    path = write_csv(rows, header=[*HEADER, "Currency"])
    monkeypatch.setattr(distribution, "CHUNK_ROWS", 2)
    [report] = validate_files([path])
    assert report.valid, report.errors
    assert report.distributions is not None
    assert list(report.distributions["currency"]) == ["USD"] * 5

"""Builders shared by the sheet tests (a uniquely named module: every test folder has a conftest)."""

from __future__ import annotations

import csv
import io

HEADER = [
    "Distribution Name",
    "Vehicle",
    "External Reference",
    "Payment Date",
    "Timezone",
    "Entity ID",
    "Amount ($)",
]


def clean_rows() -> list[list[str]]:
    """Three payments of one distribution, all valid."""
    return [
        [
            "Q4 Income",
            "veh_demo1",
            "Q4-D1",
            "2026-12-15 09:00",
            "America/New_York",
            f"ent_demo{i}",
            amount,
        ]
        for i, amount in ((1, "$1,234.56"), (2, "1234.5"), (3, "1,234"))
    ]


def csv_bytes(rows: list[list[str]], *, header: list[str] = HEADER, delimiter: str = ",") -> str:
    buf = io.StringIO(newline="")
    writer = csv.writer(buf, delimiter=delimiter, lineterminator="\r\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()

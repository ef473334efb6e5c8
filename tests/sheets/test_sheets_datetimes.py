"""Date-times in a distribution's zone: the service's DST and offset rules, per row."""

from __future__ import annotations

from datetime import datetime

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fundpipe.sheets.datetimes import parse_datetimes, resolve_many

NY = "America/New_York"


def resolve(
    text: str | None, zone: str | None = NY, *, excel: bool = False
) -> tuple[object, object]:
    out = parse_datetimes(
        pd.Series([text], dtype="str"), pd.Series([zone], dtype="str"), excel_serials=excel
    )
    iso, check = out["iso"].iloc[0], out["check"].iloc[0]
    return (None if pd.isna(iso) else iso, None if pd.isna(check) else check)


@pytest.mark.parametrize(
    ("text", "zone", "iso"),
    [
        ("2026-12-15 09:00", NY, "2026-12-15T09:00:00-05:00"),
        ("2026-12-15T09:00:00", NY, "2026-12-15T09:00:00-05:00"),
        ("2026-12-15", NY, "2026-12-15T00:00:00-05:00"),
        ("2026-7-4 9:05", NY, "2026-07-04T09:05:00-04:00"),
        ("2026-12-15T09:00:00-05:00", NY, "2026-12-15T09:00:00-05:00"),
        ("2026-11-01T01:30:00-04:00", NY, "2026-11-01T01:30:00-04:00"),
        ("2026-11-01T01:30:00-05:00", NY, "2026-11-01T01:30:00-05:00"),
        ("2026-12-15T09:00:00Z", "UTC", "2026-12-15T09:00:00+00:00"),
        ("2026-12-15T09:00:00Z", "Europe/London", "2026-12-15T09:00:00+00:00"),
        ("12/15/2026 9:00 AM", NY, "2026-12-15T09:00:00-05:00"),
        ("12/15/2026 1:30 PM", "Asia/Kolkata", "2026-12-15T13:30:00+05:30"),
    ],
)
def test_valid_datetimes_render_with_the_zones_offset(text: str, zone: str, iso: str) -> None:
    assert resolve(text, zone) == (iso, None)


@pytest.mark.parametrize(
    ("text", "zone", "check"),
    [
        ("2026-03-08 02:30", NY, "datetime_nonexistent"),
        ("2026-11-01 01:30", NY, "datetime_ambiguous"),
        ("2026-12-15T09:00:00-04:00", NY, "datetime_offset_mismatch"),
        ("2026-12-15T09:00:00Z", NY, "datetime_offset_mismatch"),
        ("2026-07-15T09:00:00Z", "Europe/London", "datetime_offset_mismatch"),
        ("2026-02-30 09:00", NY, "datetime_invalid"),
        ("13/15/2026", NY, "datetime_invalid"),
        ("next tuesday", NY, "datetime_invalid"),
        ("", NY, "datetime_required"),
    ],
)
def test_invalid_datetimes_are_row_errors(text: str, zone: str, check: str) -> None:
    assert resolve(text, zone) == (None, check)


def test_a_z_mismatch_reason_says_z_needs_a_zone_at_utc() -> None:
    out = parse_datetimes(pd.Series(["2026-12-15T09:00:00Z"]), pd.Series([NY]))
    assert "Z is only allowed where the zone is at +00:00" in out["reason"].iloc[0]


def test_spring_forward_reason_names_the_gap() -> None:
    out = parse_datetimes(pd.Series(["2026-03-08 02:30"]), pd.Series([NY]))
    assert "does not exist" in out["reason"].iloc[0]


def test_excel_serials_are_read_only_from_spreadsheets() -> None:
    assert resolve("46371.375", "UTC", excel=True) == ("2026-12-15T09:00:00+00:00", None)
    assert resolve("46371.375", "UTC", excel=False) == (None, "datetime_invalid")


def test_an_unknown_zone_leaves_the_date_to_the_zone_error() -> None:
    # the caller passes <NA> for rows whose zone is unknown: no second error on the date
    assert resolve("2026-12-15 09:00", None) == (None, None)


def test_each_row_is_read_in_its_own_zone() -> None:
    out = parse_datetimes(
        pd.Series(["2026-12-15 09:00"] * 3), pd.Series([NY, "UTC", "America/Chicago"])
    )
    assert out["iso"].tolist() == [
        "2026-12-15T09:00:00-05:00",
        "2026-12-15T09:00:00+00:00",
        "2026-12-15T09:00:00-06:00",
    ]


TRICKY = [
    "2026-12-15 09:00",
    "2026-03-08 02:30",
    "2026-11-01 01:30",
    "2026-11-01T01:30:00-04:00",
    "2026-11-01T01:30:00-05:00",
    "2026-12-15T09:00:00-04:00",
    "2026-12-15T09:00:00Z",
    "2026-06-15T13:00:00z",
    "2026-12-15",
    "2026-7-4 9:05",
    "2026-02-30 09:00",
    "2026-12-15 24:00",
    "2026-12-15 09:60",
    "12/15/2026 9:00 AM",
    "2026-12-15T09:00:00+0530",
    "2026-03-29 01:30",
    "2026-10-25 01:30",
    "2026-12-15T09:00:00.5",
    "1890-01-01 00:00",
]
ZONES = [NY, "UTC", "Europe/London", "Asia/Kolkata", "Australia/Lord_Howe", "Nope/Zone"]


def test_pandas_path_agrees_with_the_scalar_rules_on_every_tricky_case() -> None:
    texts = [t for t in TRICKY for _ in ZONES]
    zones = ZONES * len(TRICKY)
    scalar = resolve_many(texts, zones, excel_serials=False, vectorised=False)
    vectorised = resolve_many(texts, zones, excel_serials=False, vectorised=True)
    assert vectorised == scalar


@settings(max_examples=10, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.datetimes(min_value=datetime(2026, 1, 1), max_value=datetime(2027, 12, 31)),
            st.sampled_from([NY, "Europe/London", "UTC"]),
        ),
        min_size=1,
        max_size=100,
    )
)
def test_pandas_path_agrees_with_the_scalar_rules_on_random_times(
    pairs: list[tuple[datetime, str]],
) -> None:
    texts = [moment.strftime("%Y-%m-%d %H:%M") for moment, _ in pairs]
    zones = [zone for _, zone in pairs]
    assert resolve_many(texts, zones, excel_serials=False, vectorised=True) == resolve_many(
        texts, zones, excel_serials=False, vectorised=False
    )


def test_spring_forward_reason_says_no_offset_helps_and_gives_the_nearest_valid_times() -> None:
    # issue 13: "give the time with its UTC offset" was impossible advice for a time that
    # does not exist; the reason now says so and names the times on either side of the gap.
    out = parse_datetimes(pd.Series(["2026-03-08 02:30"]), pd.Series([NY]))
    reason = out["reason"].iloc[0]
    assert "clocks jump from 02:00 to 03:00 on 2026-03-08" in reason
    assert "no UTC offset makes it valid" in reason
    assert "2026-03-08 01:59 (-05:00) and 2026-03-08 03:00 (-04:00)" in reason
    half = parse_datetimes(pd.Series(["2026-10-04 02:10"]), pd.Series(["Australia/Lord_Howe"]))
    assert "02:00 to 02:30" in half["reason"].iloc[0]
    assert "2026-10-04 01:59 (+10:30) and 2026-10-04 02:30 (+11:00)" in half["reason"].iloc[0]

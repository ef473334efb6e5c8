"""Date-times in a distribution's zone: the service's DST and offset rules, per row."""

from __future__ import annotations

from datetime import datetime

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fundpipe.sheets.datetimes import parse_datetimes, resolve_many
from fundpipe.sheets.written_dates import DateOrder

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
    "03/04/2027",
    "25/04/2027 09:00",
    "04/25/2027 9:05:07",
    "25/25/2027",
    "00/04/2027",
    "31/02/2027",
    "03.04.2027 23:59",
    "03/04-2027",
    "13/04/2027 24:00",
    "04/04/2027 1:30 PM",
    "3 April 2027",
]
ZONES = [NY, "UTC", "Europe/London", "Asia/Kolkata", "Australia/Lord_Howe", "Nope/Zone"]


@pytest.mark.parametrize(
    ("order", "declared"),
    [(None, False), ("dmy", False), ("mdy", False), ("dmy", True), ("mdy", True)],
)
def test_pandas_path_agrees_with_the_scalar_rules_on_every_tricky_case(
    order: DateOrder | None, declared: bool
) -> None:
    texts = [t for t in TRICKY for _ in ZONES]
    zones = ZONES * len(TRICKY)
    how = {"order": order, "declared": declared}
    scalar = resolve_many(texts, zones, excel_serials=False, vectorised=False, **how)  # type: ignore[arg-type]
    vectorised = resolve_many(texts, zones, excel_serials=False, vectorised=True, **how)  # type: ignore[arg-type]
    assert vectorised == scalar


@settings(max_examples=20, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 35), st.integers(0, 35), st.sampled_from(["", " 09:30", " 7:05:59"])
        ),
        min_size=1,
        max_size=60,
    ),
    st.sampled_from([(None, False), ("dmy", False), ("mdy", False), ("dmy", True), ("mdy", True)]),
)
def test_pandas_path_agrees_with_the_scalar_rules_on_dates_in_figures(
    dates: list[tuple[int, int, str]], how: tuple[DateOrder | None, bool]
) -> None:
    texts = [f"{a:02d}/{b}/2027{clock}" for a, b, clock in dates]
    zones = ["Europe/London"] * len(texts)
    order, declared = how
    assert resolve_many(
        texts, zones, excel_serials=False, vectorised=True, order=order, declared=declared
    ) == resolve_many(
        texts, zones, excel_serials=False, vectorised=False, order=order, declared=declared
    )


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


# --- day and month in figures (issue 22: 03/04/2027 was read as 4 March without a word) --------


def column(
    texts: list[str], *, order: str | None = None, zone: str = "Europe/London"
) -> pd.DataFrame:
    return parse_datetimes(
        pd.Series(texts, dtype="str"),
        pd.Series([zone] * len(texts), dtype="str"),
        date_order=order,  # type: ignore[arg-type]
    )


def test_03_04_2027_alone_is_an_error_naming_both_readings() -> None:
    out = column(["03/04/2027"])
    assert out["iso"].isna().all()
    assert out["check"].tolist() == ["date_order_ambiguous"]
    reason = out["reason"].iloc[0]
    assert "03/04/2027 could be 3 April 2027 (day first) or 4 March 2027 (month first)" in reason
    assert "2027-04-03 or 2027-03-04" in reason
    assert "FUNDPIPE_DATE_ORDER" in reason


def test_a_declared_order_reads_it_that_way() -> None:
    assert column(["03/04/2027 09:00"], order="dmy")["iso"].tolist() == [
        "2027-04-03T09:00:00+01:00"
    ]
    assert column(["03/04/2027 09:00"], order="mdy")["iso"].tolist() == [
        "2027-03-04T09:00:00+00:00"
    ]
    # a value the declared order cannot read is an error, not read the other way
    wrong = column(["25/04/2027"], order="mdy")
    assert wrong["check"].tolist() == ["datetime_invalid"]
    assert "FUNDPIPE_DATE_ORDER=mdy" in wrong["reason"].iloc[0]
    assert "25 is not a month" in wrong["reason"].iloc[0]


def test_a_column_that_proves_day_first_reads_its_open_dates_day_first() -> None:
    out = column(["03/04/2027", "25/04/2027", "03/04/2027"])
    assert out["check"].isna().all()
    assert out["iso"].tolist() == [
        "2027-04-03T00:00:00+01:00",
        "2027-04-25T00:00:00+01:00",
        "2027-04-03T00:00:00+01:00",
    ]
    assert out.attrs["date_order_from_column"] == ("dmy", "25/04/2027")
    month_first = column(["03/04/2027", "04/25/2027"])
    assert month_first["iso"].iloc[0] == "2027-03-04T00:00:00+00:00"


def test_a_column_proving_both_orders_settles_nothing() -> None:
    out = column(["03/04/2027", "25/04/2027", "04/25/2027"])
    assert out["check"].iloc[0] == "date_order_ambiguous"
    assert out["check"].iloc[1:].isna().all()
    assert out["iso"].iloc[1:].tolist() == ["2027-04-25T00:00:00+01:00"] * 2
    assert "date_order_from_column" not in out.attrs


@pytest.mark.parametrize("order", [None, "dmy", "mdy"])
@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("2027-04-03", "2027-04-03T00:00:00+01:00"),
        ("2027/04/03", "2027-04-03T00:00:00+01:00"),
        ("3 April 2027", "2027-04-03T00:00:00+01:00"),
        ("3-Apr-2027", "2027-04-03T00:00:00+01:00"),
        ("3rd Apr. 2027 14:30", "2027-04-03T14:30:00+01:00"),
        ("April 3, 2027", "2027-04-03T00:00:00+01:00"),
        ("Apr 3 2027 9:00 AM", "2027-04-03T09:00:00+01:00"),
    ],
)
def test_year_first_dates_and_month_names_are_never_ambiguous(
    text: str, iso: str, order: str | None
) -> None:
    out = column([text], order=order)
    assert out["iso"].tolist() == [iso]
    assert out["check"].isna().all()


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("04/04/2027", "2027-04-04T00:00:00+01:00"),  # the same date either way
        ("25.04.2027", "2027-04-25T00:00:00+01:00"),  # 25 is no month
        ("12/15/2026 9:00 AM", "2026-12-15T09:00:00+00:00"),  # 15 is no month
    ],
)
def test_figures_with_one_reading_need_no_declared_order(text: str, iso: str) -> None:
    out = column([text])
    assert out["iso"].tolist() == [iso]
    assert out["check"].isna().all()


def test_a_month_name_that_is_no_month_is_an_invalid_date() -> None:
    out = column(["3 Aprul 2027"])
    assert out["check"].tolist() == ["datetime_invalid"]
    assert "'Aprul' is not a month name" in out["reason"].iloc[0]


def test_zero_and_impossible_numbers_prove_nothing_and_read_as_no_date() -> None:
    out = column(["00/04/2027", "03/04/2027", "45/04/2027"])
    assert out["check"].tolist() == ["datetime_invalid", "date_order_ambiguous", "datetime_invalid"]
    assert "0 is neither a day nor a month" in out["reason"].iloc[0]
    mixed_separators = column(["03/04/2027", "25/04.2027"])
    assert mixed_separators["check"].tolist() == ["date_order_ambiguous", "datetime_invalid"]

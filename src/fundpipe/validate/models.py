"""pandera models, one per sheet template, with checks named for analysts.

The models run on the *canonical* frame (columns renamed to the template's names, money already
in cents, dates already resolved) with ``lazy=True``; every failure case becomes an `Issue`
through `failure_issues`. Check names are what the error report's ``check`` column shows, and
`CHECK_REASONS` says each one in plain words.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pandera.pandas as pa
import pyarrow as pa_arrow
import pyarrow.compute as pc
from pandera import dtypes
from pandera.engines import pandas_engine
from pandera.errors import SchemaErrors
from pandera.typing import Series

from fundpipe.enums import ENTITY_TYPES, PAYMENT_TYPES, one_of
from fundpipe.validate.collect import IssueCollector

#: Largest payment accepted: $10,000,000,000.00.
MAX_AMOUNT_CENTS = 1_000_000_000_000

VEHICLE_ID = r"veh_[A-Za-z0-9]+"
ENTITY_ID = r"ent_[A-Za-z0-9]+"
CONTACT_ID = r"cnt_[A-Za-z0-9]+"
EMAIL = r"[^@\s;,<>]+@[^@\s;,<>]+\.[A-Za-z]{2,}"


CHECK_REASONS: dict[str, str] = {
    "not_nullable": "this required cell is blank",
    "name_length": "must be 1 to 255 characters",
    "vehicle_id_format": "not a vehicle id: it must look like veh_ followed by letters or digits",
    "reference_length": "must be 1 to 255 characters",
    "entity_format": "must be an entity id (ent_…) or an entity's external reference (up to 255 characters, no spaces at either end)",
    "amount_range": f"the amount must be more than $0.00 and at most ${MAX_AMOUNT_CENTS // 100:,}.00",
    "currency_usd": "only USD is accepted",
    "known_time_zone": "not a known IANA time zone (e.g. America/New_York, UTC)",
    "notify_format": "each entry must be a contact id (cnt_…) or an email address, separated by ;",
    "entity_type_known": "not an entity type; use one of: " + ", ".join(ENTITY_TYPES),
    "email_format": "not an email address",
    "payment_type_known": "the payment type must be " + one_of(PAYMENT_TYPES),
    "routing_number_format": "a routing number is 9 digits with a valid ABA check digit (a lost leading zero? format the column as text)",
    "account_number_format": "an account number is 4 to 34 letters or digits",
}


@pandas_engine.Engine.register_dtype
@dtypes.immutable(init=True)
class SheetText(pandas_engine.STRING):
    """pandas' ``str`` dtype, whose dtype check answers once per column.

    pandera's own ``str`` answers an exact dtype match with one ``True`` per cell, and then
    builds and prints an (empty) failure table for every column of every sheet: a fixed cost
    larger than the checks themselves on a small sheet. Any other answer (a mismatch, cells of
    an ``object`` column) is pandera's unchanged.
    """

    def check(self, pandera_dtype: dtypes.DataType, data_container: Any = None) -> bool | Any:
        """Whether ``pandera_dtype`` is this dtype (see the class docstring)."""
        verdict = super().check(pandera_dtype, data_container)
        if isinstance(verdict, np.ndarray) and verdict.dtype == bool and verdict.all():
            return True
        return verdict


def id_shaped(values: pa_arrow.Array | pa_arrow.ChunkedArray, prefix: str) -> np.ndarray:
    """Per cell: ``prefix`` then one or more ASCII letters or digits (`VEHICLE_ID`, `ENTITY_ID`:
    the same cells as a full match of ``prefix + "[A-Za-z0-9]+"``), as numpy (null: False).

    Two Arrow kernels instead of RE2, which costs twice as much per cell."""
    shaped = pc.and_(
        pc.starts_with(values, prefix),
        pc.ascii_is_alnum(pc.utf8_slice_codeunits(values, len(prefix))),
    )
    return np.asarray(pc.fill_null(shaped, False).to_numpy(zero_copy_only=False), dtype=bool)


def _id_shaped(s: pd.Series, prefix: str) -> pd.Series:
    """`id_shaped` of a pandas column, on its index."""
    values = pa_arrow.array(s.array, from_pandas=True)  # the column's own Arrow text, no copy
    if not (pa_arrow.types.is_string(values.type) or pa_arrow.types.is_large_string(values.type)):
        values = values.cast(pa_arrow.string())  # an object or all-null column
    return pd.Series(id_shaped(values, prefix), index=s.index)


def _length_ok(s: pd.Series) -> pd.Series:
    return s.str.len().between(1, 255)


class DistributionSheetModel(pa.DataFrameModel):
    """The distribution sheet: one payment per row (see schemas/templates/distribution_sheet.md)."""

    distribution_name: Series[SheetText] = pa.Field(nullable=False)
    vehicle: Series[SheetText] = pa.Field(nullable=False)
    external_reference: Series[SheetText] = pa.Field(nullable=False)
    entity: Series[SheetText] = pa.Field(nullable=False)
    amount_cents: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    currency: Series[SheetText] = pa.Field(nullable=True)
    distribution_timezone: Series[SheetText] = pa.Field(nullable=True)
    notify: Series[SheetText] = pa.Field(nullable=True)

    class Config:
        """Extra columns (raw dates, bookkeeping) are allowed."""

        strict = False
        coerce = False

    @pa.check("distribution_name", name="name_length")
    def _name_length(cls, s: Series[SheetText]) -> Series[bool]:
        return _length_ok(s)  # type: ignore[return-value]

    @pa.check("vehicle", name="vehicle_id_format")
    def _vehicle_id(cls, s: Series[SheetText]) -> Series[bool]:
        return _id_shaped(s, "veh_")  # type: ignore[return-value]

    @pa.check("external_reference", name="reference_length")
    def _reference_length(cls, s: Series[SheetText]) -> Series[bool]:
        return _length_ok(s)  # type: ignore[return-value]

    @pa.check("entity", name="entity_format")
    def _entity_format(cls, s: Series[SheetText]) -> Series[bool]:
        return _length_ok(s) & ~s.str.startswith("ent_") | _id_shaped(s, "ent_")  # type: ignore[return-value]

    @pa.check("amount_cents", name="amount_range")
    def _amount_range(cls, s: Series[pd.Int64Dtype]) -> Series[bool]:
        return s.between(1, MAX_AMOUNT_CENTS)  # type: ignore[return-value]

    @pa.check("currency", name="currency_usd")
    def _currency(cls, s: Series[SheetText]) -> Series[bool]:
        return s.eq("USD")  # type: ignore[return-value]

    @pa.check("notify", name="notify_format")
    def _notify(cls, s: Series[SheetText]) -> Series[bool]:
        tokens = s.str.split("; ").explode()
        ok = tokens.str.fullmatch(CONTACT_ID) | tokens.str.fullmatch(EMAIL)
        return ok.groupby(level=0).all().reindex(s.index)  # type: ignore[return-value]


class RosterSheetModel(pa.DataFrameModel):
    """The roster sheet: entities, their contacts and payment instructions (see roster_sheet.md)."""

    entity_name: Series[SheetText] = pa.Field(nullable=False)
    entity_type: Series[SheetText] = pa.Field(nullable=False)
    entity_external_reference: Series[SheetText] = pa.Field(nullable=False)
    contact_name: Series[SheetText] = pa.Field(nullable=True)
    contact_email: Series[SheetText] = pa.Field(nullable=True)
    payment_type: Series[SheetText] = pa.Field(nullable=True)
    routing_number: Series[SheetText] = pa.Field(nullable=True)
    account_number: Series[SheetText] = pa.Field(nullable=True)

    class Config:
        """Extra columns are allowed."""

        strict = False
        coerce = False

    @pa.check("entity_name", name="name_length")
    def _entity_name(cls, s: Series[SheetText]) -> Series[bool]:
        return _length_ok(s)  # type: ignore[return-value]

    @pa.check("contact_name", name="name_length")
    def _contact_name(cls, s: Series[SheetText]) -> Series[bool]:
        return _length_ok(s)  # type: ignore[return-value]

    @pa.check("entity_external_reference", name="reference_length")
    def _reference(cls, s: Series[SheetText]) -> Series[bool]:
        return _length_ok(s)  # type: ignore[return-value]

    @pa.check("entity_type", name="entity_type_known")
    def _entity_type(cls, s: Series[SheetText]) -> Series[bool]:
        return s.isin(ENTITY_TYPES)  # type: ignore[return-value]

    @pa.check("contact_email", name="email_format")
    def _email(cls, s: Series[SheetText]) -> Series[bool]:
        return s.str.fullmatch(EMAIL)  # type: ignore[return-value]

    @pa.check("payment_type", name="payment_type_known")
    def _payment_type(cls, s: Series[SheetText]) -> Series[bool]:
        return s.isin(PAYMENT_TYPES)  # type: ignore[return-value]

    @pa.check("routing_number", name="routing_number_format")
    def _routing(cls, s: Series[SheetText]) -> Series[bool]:
        return routing_number_valid(s)  # type: ignore[return-value]

    @pa.check("account_number", name="account_number_format")
    def _account(cls, s: Series[SheetText]) -> Series[bool]:
        return s.str.fullmatch(r"[A-Za-z0-9]{4,34}")  # type: ignore[return-value]


def routing_number_valid(s: pd.Series) -> pd.Series:
    """Nine digits whose ABA checksum (3-7-1 weights) is a multiple of 10; vectorised."""
    if s.empty:  # pandera drops the nulls first: a column left empty arrives with no rows
        return pd.Series([], index=s.index, dtype=bool)
    shaped = s.str.fullmatch(r"\d{9}").fillna(False).astype(bool)
    digits = s.where(shaped, "000000000").str.split("", expand=True).iloc[:, 1:10].astype("int64")
    weights = [3, 7, 1, 3, 7, 1, 3, 7, 1]
    total = digits.iloc[:, 0] * weights[0]
    for i, w in enumerate(weights[1:], start=1):
        total = total + digits.iloc[:, i] * w
    return (shaped & total.mod(10).eq(0)).where(s.notna())


def failure_issues(
    model: type[pa.DataFrameModel], frame: pd.DataFrame, issues: IssueCollector
) -> None:
    """Validate ``frame`` (index = Excel row) lazily and record every failure case."""
    try:
        # inplace: the models neither coerce nor fill defaults, so the copy pandera would make
        # first is pure cost (the whole frame, on every sheet).
        model.validate(frame, lazy=True, inplace=True)
    except SchemaErrors as exc:
        cases: pd.DataFrame = exc.failure_cases
        for (column, check), group in cases.groupby(["column", "check"], dropna=False, sort=False):
            name = _check_name(check)
            rows = group["index"]
            valid_rows = rows.notna()
            if not valid_rows.any():
                issues.add_sheet_level(str(column), None, name, CHECK_REASONS.get(name, str(check)))
                continue
            idx = pd.Index(rows[valid_rows].astype("int64"))
            mask = pd.Series(False, index=frame.index)
            mask[idx] = True
            issues.add(
                mask,
                "amount" if column == "amount_cents" else str(column),
                _source_values(frame, str(column)),
                name,
                CHECK_REASONS.get(name, str(check)),
            )


def _check_name(check: Any) -> str:
    text = str(check)
    return text.split("(", 1)[0] if text.startswith("not_nullable") else text


def _source_values(frame: pd.DataFrame, column: str) -> pd.Series:
    """What the analyst wrote for ``column`` (money shows the original text, not cents)."""
    if column == "amount_cents" and "amount" in frame.columns:
        return frame["amount"]
    return frame[column] if column in frame.columns else pd.Series(pd.NA, index=frame.index)

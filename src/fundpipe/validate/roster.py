"""The roster template: text frame → entities, contacts and payment instructions.

One row per entity, contact or payment instruction; rows for the same entity repeat its entity
columns and must agree on them. The full account number is kept only in
``payment_instructions["account_number_secret"]``; issues show ``****`` and the last four.
"""

from __future__ import annotations

import pandas as pd

from fundpipe.enums import DOMESTIC_PAYMENT_TYPES, PAYMENT_TYPES, one_of
from fundpipe.validate.collect import IssueCollector
from fundpipe.validate.issues import mask_account_number
from fundpipe.validate.models import RosterSheetModel, failure_issues

_CONTACT = ("contact_name", "contact_email", "contact_external_reference")
#: Wire details (DESIGN: wires add intermediary, SWIFT and address fields); sensitive.
WIRE_COLUMNS = (
    "swift_code",
    "intermediary_bank_name",
    "intermediary_swift_code",
    "beneficiary_address",
    "originator_to_beneficiary",
)
_PAYMENT = (
    "payment_type",
    "beneficiary_name",
    "bank_name",
    "routing_number",
    "account_number",
    "branch_code",
    "payment_external_reference",
    *WIRE_COLUMNS,
)
_SWIFT = r"[A-Za-z0-9]{8}(?:[A-Za-z0-9]{3})?"
_OBI_LINES, _OBI_WIDTH = 4, 35


def check_roster(frame: pd.DataFrame, issues: IssueCollector) -> pd.DataFrame:
    """Check a canonical-named roster text frame (index = Excel row); return it normalised."""
    out = frame.copy()
    out["entity_type"] = (
        frame["entity_type"].str.strip().str.lower().str.replace(r"[\s-]+", "_", regex=True)
    )
    out["payment_type"] = (
        frame["payment_type"].str.strip().str.lower().str.replace(r"[\s-]+", "_", regex=True)
    )
    out["account_number"] = frame["account_number"].str.replace(r"[\s-]", "", regex=True)
    for column in WIRE_COLUMNS:  # a roster written before the wire columns existed
        if column not in out:
            out[column] = pd.Series(pd.NA, index=out.index, dtype="string")
    for column in ("swift_code", "intermediary_swift_code"):
        out[column] = out[column].str.replace(r"\s", "", regex=True).str.upper()
    failure_issues(RosterSheetModel, out, issues)

    ref = out["entity_external_reference"]
    for column in ("entity_name", "entity_type", "entity_external_type"):
        values = out[column].fillna("")
        known = ref.notna()
        first = values[known].groupby(ref[known]).transform("first")
        disagree = values[known].ne(first).reindex(out.index, fill_value=False)
        reason = (
            "rows of entity "
            + ref.astype("str")
            + f" disagree on {column}; the first says "
            + first.reindex(out.index).astype("str")
        ).where(disagree)
        issues.add(disagree, column, out[column], "entity_rows_agree", reason)

    has_contact = out[list(_CONTACT)].notna().any(axis=1)
    for column in ("contact_name", "contact_email"):
        issues.add(
            has_contact & out[column].isna(),
            column,
            out[column],
            "contact_complete",
            "a contact needs both a name and an email",
        )
    has_payment = out[list(_PAYMENT)].notna().any(axis=1)
    issues.add(
        has_payment & out["payment_type"].isna(),
        "payment_type",
        out["payment_type"],
        "payment_complete",
        f"payment instructions need a payment type ({one_of(PAYMENT_TYPES)})",
    )
    issues.add(
        has_payment & out["account_number"].isna(),
        "account_number",
        None,
        "payment_complete",
        "payment instructions need an account number",
    )
    domestic = out["payment_type"].isin(DOMESTIC_PAYMENT_TYPES)
    issues.add(
        has_payment & domestic & out["routing_number"].isna(),
        "routing_number",
        None,
        "payment_complete",
        "ach and domestic wires need a routing number",
    )
    _check_wires(out, has_payment, issues)
    return out


def _check_wires(out: pd.DataFrame, has_payment: pd.Series, issues: IssueCollector) -> None:
    """Wire details present by type and well formed; values shown masked (they are sensitive)."""
    kind = out["payment_type"]
    issues.add(
        has_payment & kind.eq("international_wire") & out["beneficiary_address"].isna(),
        "beneficiary_address",
        None,
        "wire_complete",
        "international wires need the beneficiary's address",
    )
    issues.add(
        has_payment & kind.eq("international_wire") & out["swift_code"].isna(),
        "swift_code",
        None,
        "wire_complete",
        "international wires need the beneficiary bank's SWIFT code",
    )
    for column in ("swift_code", "intermediary_swift_code"):
        value = out[column]
        bad = value.notna() & ~value.fillna("").str.fullmatch(_SWIFT)
        issues.add(
            bad,
            column,
            value.map(mask_account_number, na_action="ignore"),
            "swift_code_format",
            "a SWIFT/BIC code is 8 or 11 letters or digits",
        )
    lines = out["originator_to_beneficiary"].fillna("").str.split(";")
    too_long = lines.map(
        lambda parts: len(parts) > _OBI_LINES or any(len(p.strip()) > _OBI_WIDTH for p in parts)
    )
    issues.add(
        out["originator_to_beneficiary"].notna() & too_long,
        "originator_to_beneficiary",
        None,
        "wire_lines",
        f"at most {_OBI_LINES} originator-to-beneficiary lines of {_OBI_WIDTH} characters, "
        "separated by ';'",
    )


def roster_frames(
    out: pd.DataFrame, *, source_file: str, sheet: str | None
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(entities, contacts, payment_instructions) frames from a fully valid roster frame."""
    base = out.assign(source_file=source_file, sheet=sheet, row=out.index.astype("int64"))
    entities = (
        base.drop_duplicates("entity_external_reference")[
            [
                "source_file",
                "sheet",
                "row",
                "entity_name",
                "entity_type",
                "entity_external_type",
                "entity_external_reference",
            ]
        ]
        .rename(
            columns={
                "entity_name": "name",
                "entity_type": "type",
                "entity_external_type": "external_type",
                "entity_external_reference": "external_reference",
            }
        )
        .reset_index(drop=True)
    )
    has_contact = base[list(_CONTACT)].notna().any(axis=1)
    contacts = (
        base[has_contact][
            [
                "source_file",
                "sheet",
                "row",
                "contact_name",
                "contact_email",
                "contact_external_reference",
                "entity_external_reference",
            ]
        ]
        .rename(
            columns={
                "contact_name": "name",
                "contact_email": "email",
                "contact_external_reference": "external_reference",
            }
        )
        .drop_duplicates(["entity_external_reference", "email"])
        .reset_index(drop=True)
    )
    has_payment = base[list(_PAYMENT)].notna().any(axis=1)
    payments = base[has_payment][
        ["source_file", "sheet", "row", "entity_external_reference", *_PAYMENT]
    ].rename(
        columns={
            "payment_type": "type",
            "account_number": "account_number_secret",
            "payment_external_reference": "external_reference",
        }
    )
    payments.insert(
        9,
        "account_number_last_four",
        payments["account_number_secret"].map(lambda v: mask_account_number(v)[-4:]),
    )
    return entities, contacts, payments.reset_index(drop=True)

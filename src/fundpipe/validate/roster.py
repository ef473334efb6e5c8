"""The roster template: text frame → entities, contacts and payment instructions.

One row per entity, contact or payment instruction; rows for the same entity repeat its entity
columns and must agree on them. The full account number is kept only in
``payment_instructions["account_number_secret"]``; issues show ``****`` and the last four.
"""

from __future__ import annotations

import pandas as pd

from fundpipe.enums import DOMESTIC_PAYMENT_TYPES, PAYMENT_TYPES, one_of
from fundpipe.validate.collect import IssueCollector, column_named
from fundpipe.validate.issues import mask_account_number
from fundpipe.validate.models import RosterSheetModel, failure_issues

_CONTACT = ("contact_name", "contact_email", "contact_external_reference")
#: The instruction lines, in the public description's names (lines 1-3 of 35 characters).
OBI_LINES = tuple(f"originator_to_beneficiary_instructions_line{n}" for n in (1, 2, 3))
#: The beneficiary's address in parts (sent as the instruction's `address` object).
ADDRESS_COLUMNS = (
    "beneficiary_street1",
    "beneficiary_street2",
    "beneficiary_city",
    "beneficiary_state",
    "beneficiary_postal_code",
    "beneficiary_country_code",
)
#: Wire details (DESIGN: wires add intermediary, SWIFT and address fields), in the public
#: description's names (its domestic_wire / international_wire inputs).
WIRE_COLUMNS = (
    "swift_code",
    "intermediary_party_name",
    "intermediary_party_swift_code",
    *OBI_LINES,
    *ADDRESS_COLUMNS,
)
#: Older wire columns still recognised: the `;`-separated lines (split into lines 1-3) and the
#: one-line address (refused: it cannot be split reliably).
_OLDER = ("originator_to_beneficiary", "beneficiary_address")
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
_OBI_WIDTH = 35
_PO_BOX = r"(?i).*\bP\.?\s*O\.?\s*Box\b.*"
#: What an analyst writes instead of a one-line address (the template's headers).
_ADDRESS_HEADERS = (
    "Beneficiary Street 1, Beneficiary Street 2, Beneficiary City, Beneficiary State, "
    "Beneficiary Postal Code, Beneficiary Country Code"
)


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
    for column in (*WIRE_COLUMNS, *_OLDER):  # a roster written before the wire columns existed
        if column not in out:
            out[column] = pd.Series(pd.NA, index=out.index, dtype="string")
    for column in ("swift_code", "intermediary_party_swift_code", "beneficiary_country_code"):
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
            + f" disagree on {column_named(column)}; the first says "
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
    has_payment = out[[*_PAYMENT, *_OLDER]].notna().any(axis=1)
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
    """Wire details present by type and well formed (SWIFT codes and instruction lines shown
    masked: they are sensitive; the address is not)."""
    kind = out["payment_type"]
    international = has_payment & kind.eq("international_wire")
    issues.add(
        international & out["swift_code"].isna(),
        "swift_code",
        None,
        "wire_complete",
        "international wires need the beneficiary bank's SWIFT code",
    )
    issues.add(
        international & out["routing_number"].notna(),
        "routing_number",
        out["routing_number"],
        "wire_fields",
        "an international wire takes no routing number (its bank is named by the SWIFT code); "
        "leave it empty or make the row a domestic_wire",
    )
    issues.add(
        has_payment & kind.eq("domestic_wire") & out["swift_code"].notna(),
        "swift_code",
        out["swift_code"].map(mask_account_number, na_action="ignore"),
        "wire_fields",
        "a domestic wire takes no SWIFT code (its bank is named by the routing number); "
        "leave it empty or make the row an international_wire",
    )
    filled = out[[*WIRE_COLUMNS, *_OLDER]].notna()
    if not filled.to_numpy().any():  # a roster of ach instructions only: nothing more to check
        for column, what in _ADDRESS_REQUIRED:
            issues.add(international, column, None, "address_complete", _address_needs(what))
        return
    ach = has_payment & kind.eq("ach")
    for column in (*WIRE_COLUMNS, *_OLDER):
        if column == "beneficiary_address":
            continue  # refused on every row below
        issues.add(
            ach & filled[column],
            column,
            None,
            "wire_fields",
            "ach instructions take no wire details; leave it empty or make the row a wire",
        )
    for column in ("swift_code", "intermediary_party_swift_code"):
        value = out[column]
        bad = value.notna() & ~value.fillna("").str.fullmatch(_SWIFT)
        issues.add(
            bad,
            column,
            value.map(mask_account_number, na_action="ignore"),
            "swift_code_format",
            "a SWIFT/BIC code is 8 or 11 letters or digits",
        )
    _check_lines(out, issues)
    _check_address(out, international, issues)


_ADDRESS_REQUIRED = (
    ("beneficiary_street1", "street"),
    ("beneficiary_city", "city"),
    ("beneficiary_country_code", "country code"),
)


def _address_needs(what: str) -> str:
    return f"a wire's address needs its {what} (street 1, city and country code are required)"


def _check_lines(out: pd.DataFrame, issues: IssueCollector) -> None:
    """Lines 1-3 of 35 characters; the older `;`-separated column split into them."""
    older = out["originator_to_beneficiary"]
    split = pd.Series(False, index=out.index)
    if older.notna().any():  # the usual roster has no older one-cell column to split
        both = older.notna() & out[list(OBI_LINES)].notna().any(axis=1)
        issues.add(
            both,
            "originator_to_beneficiary",
            None,
            "wire_lines",
            "fill either the originator-to-beneficiary lines 1-3 or the older one-cell column, "
            "not both",
        )
        parts = older.fillna("").str.split(";")
        too_many = older.notna() & parts.map(len).gt(len(OBI_LINES))
        issues.add(
            too_many,
            "originator_to_beneficiary",
            None,
            "wire_lines",
            f"at most {len(OBI_LINES)} originator-to-beneficiary lines, separated by ';'",
        )
        split = older.notna() & ~both & ~too_many
        for n, column in enumerate(OBI_LINES):
            line = parts.map(lambda p, n=n: p[n].strip() if n < len(p) else "")
            take = split & line.ne("")
            out.loc[take, column] = line[take]
        out["originator_to_beneficiary"] = pd.Series(pd.NA, index=out.index, dtype="string")
    reason = f"an originator-to-beneficiary line is at most {_OBI_WIDTH} characters"
    for column in OBI_LINES:
        too_long = out[column].notna() & out[column].str.len().gt(_OBI_WIDTH)
        # the error names the column the analyst wrote the line in
        issues.add(too_long & split, "originator_to_beneficiary", None, "wire_lines", reason)
        issues.add(too_long & ~split, column, None, "wire_lines", reason)


def _check_address(out: pd.DataFrame, international: pd.Series, issues: IssueCollector) -> None:
    """The address in parts: street 1, city and country code once any part is filled (and for
    every international wire); a one-line address is refused, naming the columns to use."""
    one_line = out["beneficiary_address"]
    issues.add(
        one_line.notna(),
        "beneficiary_address",
        one_line,
        "address_in_parts",
        "a one-line address cannot be sent (the service takes it in parts); write it in the "
        f"columns {_ADDRESS_HEADERS} and leave this column empty",
    )
    has_address = out[list(ADDRESS_COLUMNS)].notna().any(axis=1)
    for column, what in _ADDRESS_REQUIRED:
        issues.add(
            (has_address | (international & one_line.isna())) & out[column].isna(),
            column,
            None,
            "address_complete",
            _address_needs(what),
        )
    country = out["beneficiary_country_code"]
    issues.add(
        country.notna() & ~country.fillna("").str.fullmatch(r"[A-Z]{2}"),
        "beneficiary_country_code",
        country,
        "country_code_format",
        "a country is its ISO 3166-1 two-letter code (US, CH, GB, ...)",
    )
    us = country.eq("US")
    state = out["beneficiary_state"]
    issues.add(
        us & state.notna() & ~state.fillna("").str.fullmatch(r"[A-Za-z]{2}"),
        "beneficiary_state",
        state,
        "address_format",
        "a US state is its two letters (CA, NY, ...)",
    )
    postal = out["beneficiary_postal_code"]
    issues.add(
        us & postal.notna() & ~postal.fillna("").str.fullmatch(r"\d{5}(?:-\d{4})?"),
        "beneficiary_postal_code",
        postal,
        "address_format",
        "a US postal code is a ZIP or ZIP+4 (94105, 94105-1234)",
    )
    for column in ("beneficiary_street1", "beneficiary_street2"):
        street = out[column]
        issues.add(
            street.notna() & street.fillna("").str.fullmatch(_PO_BOX),
            column,
            street,
            "address_format",
            "a wire's street address may not be a PO box",
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

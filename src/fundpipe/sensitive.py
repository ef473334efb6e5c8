"""What is secret in a payment instruction, and the one way to show it masked.

:data:`SENSITIVE_FIELDS` is the one list: the client's redaction (`fundpipe.client.redact`),
the plan's displayed bodies (`fundpipe.plan.display_body`) and the validation's issues
(`fundpipe.validate.issues`) all read it; :func:`mask` is the one masking function.
"""

from __future__ import annotations

__all__ = ["SENSITIVE_FIELDS", "mask"]

#: Payment-instruction fields whose values are secrets wherever they appear: the account
#: number and the wire details (as sensitive as the account number). An address is not a
#: secret: a retired one-line address is shown as written in the error that refuses it.
SENSITIVE_FIELDS = frozenset(
    {
        "account_number",
        "swift_code",
        "intermediary_bank_name",
        "intermediary_swift_code",
        "originator_to_beneficiary",
        # the public description's wire names (the address object is not a secret)
        "intermediary_party_name",
        "intermediary_party_swift_code",
        "originator_to_beneficiary_instructions_line1",
        "originator_to_beneficiary_instructions_line2",
        "originator_to_beneficiary_instructions_line3",
    }
)


def mask(value: object) -> str:
    """``"****6789"``: only the last four characters survive ("" for nothing, ``****`` for
    four characters or fewer)."""
    text = "" if value is None else str(value).strip()
    if not text:
        return ""
    return "****" + text[-4:] if len(text) > 4 else "****"

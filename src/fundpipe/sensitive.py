"""What is secret in a payment instruction, and the one way to show it masked.

:data:`SENSITIVE_FIELDS` is the one list: the client's redaction (`fundpipe.client.redact`),
the plan's displayed bodies (`fundpipe.plan.display_body`) and the validation's issues
(`fundpipe.validate.issues`) all read it; :func:`mask` is the one masking function.
"""

from __future__ import annotations

__all__ = ["SENSITIVE_FIELDS", "mask"]

#: Payment-instruction fields whose values are secrets wherever they appear: the account
#: number and the wire details (as sensitive as the account number).
SENSITIVE_FIELDS = frozenset(
    {
        "account_number",
        "swift_code",
        "intermediary_bank_name",
        "intermediary_swift_code",
        "beneficiary_address",
        "originator_to_beneficiary",
    }
)


def mask(value: object) -> str:
    """``"****6789"``: only the last four characters survive ("" for nothing, ``****`` for
    four characters or fewer)."""
    text = "" if value is None else str(value).strip()
    if not text:
        return ""
    return "****" + text[-4:] if len(text) > 4 else "****"

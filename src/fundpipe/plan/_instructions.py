"""Payment instructions matched by content: the fingerprint, and the roster instruction held
when it matches none of its entity's.

An instruction created without `external_reference` (a service refusing that field, see
docs/architecture.md, "Learned body forms") is known on a later night by its entity and a
fingerprint of its content, computed from what a read of the service's record gives back — so
the same from a roster row, from the ledger's masked body and from the service's record.

Part of :mod:`fundpipe.plan` (import the public names from there).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from fundpipe.plan._values import _text

#: The payment-instruction fields a read gives back (GET /payment_instructions/{id}, an
#: entity's instruction list; the public docs' record) that an instruction's fingerprint
#: covers, besides the account's last four digits. The full account number is never returned,
#: and neither are SWIFT, intermediary and address fields: none of these is in it.
FINGERPRINT_FIELDS = ("type", "beneficiary_name", "bank_name", "routing_number", "branch_code")


def _last_four(instruction: Mapping[str, Any]) -> str:
    """The last four digits of the account: the record's `account_number_last_four`, else the
    digits of `account_number` (a roster's full number, or the ledger's ``****1234``)."""
    for name in ("account_number_last_four", "account_number"):
        text = _text(instruction.get(name))
        if text is not None:
            digits = "".join(c for c in text if c.isdigit())
            return digits[-4:]
    return ""


def instruction_fingerprint(instruction: Mapping[str, Any]) -> str | None:
    """The content fingerprint of one payment instruction, the same from a roster row (its full
    account number), the ledger's masked body and the service's record (last four digits).

    SHA-256 over :data:`FINGERPRINT_FIELDS` (whitespace collapsed, case folded; blank and absent
    alike) and the account's last four digits only, so it cannot be turned back into the account
    number. None when the instruction shows none of these (a record giving only its id).
    """
    parts = [
        " ".join((_text(instruction.get(n)) or "").split()).casefold() for n in FINGERPRINT_FIELDS
    ]
    parts.append(_last_four(instruction))
    if not any(parts):
        return None
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return "pif1:" + digest[:32]

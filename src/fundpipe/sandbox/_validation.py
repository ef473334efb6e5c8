"""Validation of the roster bodies: entities, contacts, contact association and payment
instructions — every failure of a batch at once, named as a path into the body.

The building blocks (id shapes, limits, `Checker`) are in `_checks`; distributions, the largest
body, in `_distribution_validation`.
"""

from __future__ import annotations

import re
from typing import Any

from fundpipe import enums
from fundpipe.enums import (
    PUBLIC_ADDRESS_FIELDS,
    PUBLIC_ADDRESS_REQUIRED,
    PUBLIC_INSTRUCTION_FIELDS_BY_TYPE,
)
from fundpipe.sandbox._checks import MAX_ELEMENTS, Checker, Lookup, body_array
from fundpipe.sandbox._errors import InvalidParam, param
from fundpipe.sandbox._modes import PUBLIC_INSTRUCTION_FIELDS

#: Entity `type` values (interface, "Entity"): the one list, `fundpipe.enums` (tested against
#: schemas/openapi.yaml by tests/test_enums.py).
ENTITY_TYPES = frozenset(enums.ENTITY_TYPES)
#: Most `external_references` one entity or contact carries (public forms; ours, like the
#: batch limit: the public spec states none).
MAX_REFERENCES = 100
#: The HTML5 "valid e-mail address" grammar: ASCII letters, digits and the listed punctuation
#: only (no control characters, spaces or non-ASCII). schemas/openapi.yaml documents this very
#: pattern (ContactCreate.email; tests/contract checks they are identical).
EMAIL_PATTERN = re.compile(
    r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$"
)


def _references(
    checker: Checker, element: dict[str, Any], path: str, public: bool
) -> tuple[str | None, list[str] | None]:
    """(`external_reference`, `external_references`) of an entity or contact element.

    Public forms take the array (each a string, at most MAX_REFERENCES; its first non-empty one
    is also kept as the single reference); otherwise the single, nullable string — and the
    array too, as the public description writes it (no form is stricter than the public
    description where the interface is silent), the single one first when both are given.
    """
    if not public:
        single = checker.string(element, "external_reference", path, nullable=True)
        if "external_references" not in element:
            return single, None
        first, listed = _references(checker, element, path, public=True)
        both = list(listed or [])
        if single is not None and single not in both:
            both = [single, *both]
        return single if single is not None else first, both
    where = f"{path}.external_references"
    if "external_references" not in element:
        return None, []
    value = element["external_references"]
    if value is None:  # the public schema: a non-nullable array of strings
        checker.add(param(where, "parameter_invalid", "must be an array of strings", value))
        return None, []
    items = checker.array(value, where, 0, MAX_REFERENCES)
    refs: list[str] = []
    for k, ref in enumerate(items or []):
        if not isinstance(ref, str):
            checker.add(
                param(
                    f"{where}.[{k}]",
                    "parameter_invalid_string",
                    "each reference must be a string",
                    ref,
                )
            )
        else:
            refs.append(ref)  # an empty string too: the public schema sets no minimum length
    return next((r for r in refs if r), None), refs


def _reference_fields(public: bool) -> tuple[str, ...]:
    if public:
        return ("external_references",)
    return ("external_reference", "external_references")


def validate_entities(
    body: Any, *, public: bool = False, reject_unknown: bool = False
) -> tuple[list[dict[str, Any]], list[InvalidParam]]:
    """Validate a create-entities body (`public`: the public spec's `external_references`;
    `reject_unknown`: nor `external_type`, which the public EntityCreateInput does not have)."""
    checker = Checker()
    clean: list[dict[str, Any]] = []
    ref_fields = _reference_fields(public)
    optional = ref_fields if reject_unknown else ("external_type", *ref_fields)
    for i, element in enumerate(body_array(checker, body)):
        path = f"body.[{i}]"
        if not checker.fields(element, path, ("name", "type"), optional):
            continue
        kind = checker.string(element, "type", path)
        if kind is not None and kind not in ENTITY_TYPES:
            checker.add(param(f"{path}.type", "parameter_invalid", "not an entity type", kind))
        reference, references = _references(checker, element, path, public)
        clean.append(
            {
                "name": checker.string(element, "name", path, max_len=255),
                "type": kind,
                "external_type": checker.string(element, "external_type", path, nullable=True),
                "external_reference": reference,
                "external_references": references,
            }
        )
    return clean, checker.problems


def validate_contacts(
    body: Any, *, public: bool = False
) -> tuple[list[dict[str, Any]], list[InvalidParam]]:
    """Validate a create-contacts body (`public`: the public spec's `external_references`)."""
    checker = Checker()
    clean: list[dict[str, Any]] = []
    for i, element in enumerate(body_array(checker, body)):
        path = f"body.[{i}]"
        if not checker.fields(element, path, ("name", "email"), _reference_fields(public)):
            continue
        email = checker.string(element, "email", path, max_len=254)
        if email is not None and not EMAIL_PATTERN.fullmatch(email):
            checker.add(param(f"{path}.email", "parameter_invalid", "not an email address", email))
        reference, references = _references(checker, element, path, public)
        clean.append(
            {
                "name": checker.string(element, "name", path, max_len=255),
                "email": email,
                "external_reference": reference,
                "external_references": references,
            }
        )
    return clean, checker.problems


def validate_association(body: Any, lookup: Lookup) -> tuple[list[str], list[InvalidParam]]:
    """Validate an associate-contacts body (`[{id: cnt_…}]`, 1 to 100 elements)."""
    checker = Checker()
    ids: list[str] = []
    for i, element in enumerate(body_array(checker, body)):
        path = f"body.[{i}]"
        if checker.fields(element, path, ("id",), ()):
            contact = checker.ref(element, "id", path, "contact")
            if contact is not None:
                ids.append(contact)
    checker.resolve_refs(lookup)
    return ids, checker.problems


_INSTRUCTION_FIELDS = (
    "type",
    "beneficiary_name",
    "bank_name",
    "routing_number",
    "branch_code",
    "external_reference",
)


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, dict | list):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def validate_payment_instructions(
    body: Any, lookup: Lookup, *, public: bool = False, reject_unknown: bool = False
) -> tuple[list[dict[str, Any]], list[InvalidParam]]:
    """Validate a create-payment-instructions body.

    Only the shape and the entity reference are checked: the instructions themselves are taken
    as given (partial instructions accepted; the interface says no input validation). `public`:
    an empty `payment_instructions` list is taken too; `reject_unknown`: an instruction field
    its type's public input does not have (`PUBLIC_INSTRUCTION_FIELDS_BY_TYPE`) is
    `parameter_unknown`, an `address` not in the public `WireAddress` form `parameter_invalid`.
    """
    checker = Checker()
    clean: list[dict[str, Any]] = []
    for i, element in enumerate(body_array(checker, body)):
        path = f"body.[{i}]"
        if not checker.fields(element, path, ("entity", "payment_instructions"), ()):
            continue
        entity = checker.ref(element, "entity", path, "entity")
        items = None
        if "payment_instructions" in element:
            items = checker.array(
                element["payment_instructions"],
                f"{path}.payment_instructions",
                0 if public else 1,
                MAX_ELEMENTS,
            )
        instructions: list[dict[str, Any]] = []
        for j, item in enumerate(items or []):
            if not isinstance(item, dict):
                checker.add(
                    param(
                        f"{path}.payment_instructions.[{j}]",
                        "parameter_invalid",
                        "must be an object",
                    )
                )
                continue
            if reject_unknown:
                _public_instruction(checker, item, f"{path}.payment_instructions.[{j}]")
            record = {name: _text(item.get(name)) for name in _INSTRUCTION_FIELDS}
            digits = re.sub(r"\D", "", _text(item.get("account_number")) or "")
            record["last_four"] = digits[-4:] if digits else None
            instructions.append(record)
        clean.append({"entity": entity, "payment_instructions": instructions})
    checker.resolve_refs(lookup)
    return clean, checker.problems


def _public_instruction(checker: Checker, item: dict[str, Any], path: str) -> None:
    """Refuse what the public input of the instruction's type does not allow: fields it does not
    have, and an `address` that is not a `WireAddress` (an object of string parts, `street1`,
    `city` and `country_code` present, no other part)."""
    allowed = PUBLIC_INSTRUCTION_FIELDS_BY_TYPE.get(
        str(item.get("type")), PUBLIC_INSTRUCTION_FIELDS
    )
    for name in item:
        if name not in allowed:
            checker.add(param(f"{path}.{name}", "parameter_unknown", f"unknown field {name}"))
    if "address" not in item or "address" not in allowed:
        return
    address = item["address"]
    if not isinstance(address, dict):
        checker.add(param(f"{path}.address", "parameter_invalid", "must be an object"))
        return
    for name, value in address.items():
        if name not in PUBLIC_ADDRESS_FIELDS:
            checker.add(
                param(f"{path}.address.{name}", "parameter_unknown", f"unknown field {name}")
            )
        elif not isinstance(value, str):
            checker.add(param(f"{path}.address.{name}", "parameter_invalid", "must be a string"))
    for name in PUBLIC_ADDRESS_REQUIRED:
        if name not in address:
            checker.add(param(f"{path}.address.{name}", "parameter_missing", f"{name} is required"))

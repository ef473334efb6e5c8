"""The two public forms of an entity's or contact's reference in a create body.

The interface and the public docs send `external_reference` (a string); the public spec sends
`external_references` (an array of strings). The client sends the string form until the service
refuses it — a 400 or 422 whose `invalid-params` (or `param`, or message) name
`external_reference` as unknown, or name `external_references` as missing — and then sends
`external_references: [ref]` for the rest of the run (see `FundClient.create_entities`).

A refused batch created nothing (creates are atomic), so sending the rewritten body once cannot
make an investor twice; its Idempotency-Key is derived from the rewritten body, so a re-run sends
the same key for it.
"""

from __future__ import annotations

import re
from typing import Any

from fundpipe.client._errors import APIError

SINGLE_FORM = "external_reference"
ARRAY_FORM = "external_references"

_UNKNOWN_WORDS = re.compile(
    r"unknown|unrecogni[sz]ed|not (?:allowed|permitted|supported|expected)|unexpected|"
    r"extra|additional propert",
    re.IGNORECASE,
)
_SINGLE_NAMED = re.compile(r"\bexternal_reference\b(?!s)")


def uses_single_form(body: list[Any]) -> bool:
    """Whether any element of a create body carries `external_reference`."""
    return any(isinstance(e, dict) and SINGLE_FORM in e for e in body)


def to_array_form(body: list[Any]) -> list[Any]:
    """The body with every `external_reference: ref` as `external_references: [ref]`.

    A null reference is dropped; an element that already has `external_references` keeps them
    (the string is added in front when it is not among them).
    """
    out: list[Any] = []
    for element in body:
        if not isinstance(element, dict) or SINGLE_FORM not in element:
            out.append(element)
            continue
        rewritten = {k: v for k, v in element.items() if k != SINGLE_FORM}
        ref = element[SINGLE_FORM]
        if ref is not None:
            refs = list(rewritten.get(ARRAY_FORM) or [])
            rewritten[ARRAY_FORM] = refs if ref in refs else [ref, *refs]
        out.append(rewritten)
    return out


def _field(name: str) -> str:
    """The field of an `invalid-params` name: `body.[0].external_reference` → its last part."""
    return re.split(r"[.\[\]/]+", name.strip(".[]/"))[-1] if name else ""


def refuses_single_form(error: APIError) -> bool:
    """Whether `error` is the service refusing `external_reference` in favour of the array."""
    if error.status not in (400, 422):
        return False
    for param in error.invalid_params:
        field = _field(param.name)
        if field == SINGLE_FORM and (
            "parameter_unknown" in (param.code, error.code) or _UNKNOWN_WORDS.search(param.reason)
        ):
            return True
        if field == ARRAY_FORM and "parameter_missing" in (param.code, error.code):
            return True
    if error.invalid_params:
        return False
    return bool(_SINGLE_NAMED.search(error.message)) and (
        error.code == "parameter_unknown" or bool(_UNKNOWN_WORDS.search(error.message))
    )

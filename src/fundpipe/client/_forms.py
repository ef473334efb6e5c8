"""Create bodies in the form the service takes, where the interface leaves the body unshown.

The client sends the interface's and the public docs' fields. Where the public spec (an older
OpenAPI description of the same service) allows fewer, a strict service refuses them; the
client then learns, once per create path:

| path | field sent first | learned form (`body_forms[path]`) |
|---|---|---|
| `/v1/entities`, `/v1/contacts` | `external_reference` (string) | `external_references`: `external_references: [ref]` |
| `/v1/payment_instructions` | `payment_instructions[].external_reference` | `no_external_reference`: the field left out |

A create refused with 400 or 422 is sent once more in the learned form when the refusal names
the field it sent — in `invalid-params[].name`, in the older form's `param`, or in the message
(and not for a value-only reason such as an empty string) — or names no field at all while the
body carried the field (a validating gateway's 422 may name nothing); an entity or contact
refusal naming `external_references` as missing counts too. Anything else is raised as is.

Never twice: creates are atomic, so a batch refused with 400/422 created nothing; the resend
carries the Idempotency-Key derived from the rewritten body (`idempotency_key(org, "POST",
path, rewritten)`), so a re-run of the same batch in the learned form sends that same key and
gets the stored answer, not a second create. The learned forms are kept in the organization's
binding (`fundpipe.submit.binding.remember_body_forms`), so the next night starts with them.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from fundpipe.client._errors import APIError, InvalidRequestError, UnprocessableEntityError
from fundpipe.client._idempotency import idempotency_key, to_json_value
from fundpipe.client._requester import Requester

logger = logging.getLogger("fundpipe.client")

M = TypeVar("M", bound=BaseModel)

SINGLE_FORM = "external_reference"
ARRAY_FORM = "external_references"
#: The learned form of payment instructions: sent without `external_reference`.
NO_REFERENCE = "no_external_reference"

#: Create path → (the field the client sends first, the form it learns when refused).
LEARNABLE: dict[str, tuple[str, str]] = {
    "/v1/entities": (SINGLE_FORM, ARRAY_FORM),
    "/v1/contacts": (SINGLE_FORM, ARRAY_FORM),
    "/v1/payment_instructions": (SINGLE_FORM, NO_REFERENCE),
}

#: Codes that say a value is wrong, not that the field is unwelcome: no other form helps.
_VALUE_CODES = frozenset(
    {"parameter_invalid_string", "parameter_invalid_string_empty", "parameter_invalid_integer"}
)
_SINGLE_NAMED = re.compile(r"\bexternal_reference\b(?!s)")
_ANY_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _instructions(element: Any) -> list[Any]:
    items = element.get("payment_instructions") if isinstance(element, dict) else None
    return items if isinstance(items, list) else []


def carries_field(path: str, body: list[Any]) -> bool:
    """Whether the create body for `path` carries the field the client may have to give up."""
    if path == "/v1/payment_instructions":
        return any(
            isinstance(item, dict) and SINGLE_FORM in item
            for element in body
            for item in _instructions(element)
        )
    return uses_single_form(body)


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


def without_instruction_references(body: list[Any]) -> list[Any]:
    """The payment-instructions body with `external_reference` left out of every instruction."""
    out: list[Any] = []
    for element in body:
        if not isinstance(element, dict) or not _instructions(element):
            out.append(element)
            continue
        items = [
            {k: v for k, v in item.items() if k != SINGLE_FORM} if isinstance(item, dict) else item
            for item in _instructions(element)
        ]
        out.append({**element, "payment_instructions": items})
    return out


def rewrite(form: str, body: list[Any]) -> list[Any]:
    """`body` in the learned `form`."""
    if form == ARRAY_FORM:
        return to_array_form(body)
    if form == NO_REFERENCE:
        return without_instruction_references(body)
    raise ValueError(f"unknown body form {form!r}")


def _field(name: str) -> str:
    """The field of an `invalid-params` name: `body.[0].external_reference` → its last part."""
    return re.split(r"[.\[\]/]+", name.strip(".[]/"))[-1] if name else ""


def _body_fields(body: list[Any]) -> set[str]:
    names: set[str] = set()
    for element in body:
        if isinstance(element, dict):
            names.update(element)
            for item in _instructions(element):
                if isinstance(item, dict):
                    names.update(item)
    return names


def refuses_field(error: APIError, path: str, body: list[Any]) -> bool:
    """Whether `error` refuses the learnable field of `path` that `body` carries.

    A 400/422 naming that field (not for a value-only reason), naming the array form as
    missing (entities, contacts), or naming no field of the body at all.
    """
    if error.status not in (400, 422) or error.code == "idempotency_mismatch":
        return False
    field, form = LEARNABLE[path]
    if not carries_field(path, body):
        return False
    for param in error.invalid_params:
        named = _field(param.name)
        code = param.code or error.code or ""
        if named == field and code not in _VALUE_CODES:
            return True
        if form == ARRAY_FORM and named == ARRAY_FORM and "parameter_missing" in (code, error.code):
            return True
    if error.invalid_params:
        return False
    if _SINGLE_NAMED.search(error.message):
        return (error.code or "") not in _VALUE_CODES
    # Names nothing: the undocumented field the body carried is the suspect, unless the
    # message names another field the body carried.
    mentioned = set(_ANY_WORD.findall(error.message)) & (_body_fields(body) - {field})
    return not mentioned


def refuses_single_form(error: APIError) -> bool:
    """Whether `error` refuses an entity's `external_reference` (see `refuses_field`)."""
    return refuses_field(error, "/v1/entities", [{SINGLE_FORM: ""}])


class ReferenceForm:
    """The body form one client sends to each create path, learned from the service."""

    def __init__(
        self,
        requester: Requester,
        org_id: str | None,
        learned: Mapping[str, str] | None = None,
    ) -> None:
        """Send through `requester`; derive keys for `org_id`; start with the `learned` forms
        (a binding's, from an earlier night; unknown paths or forms are ignored)."""
        self._requester = requester
        self._org_id = org_id
        #: Create path → the form the service was found to want (`LEARNABLE`).
        self.body_forms: dict[str, str] = {
            path: form
            for path, form in (learned or {}).items()
            if path in LEARNABLE and LEARNABLE[path][1] == form
        }
        #: Plain-language notes for the run summary.
        self.notes: list[str] = []

    async def create(
        self,
        path: str,
        elements: Sequence[Mapping[str, Any] | BaseModel],
        model: type[M],
        key: str | None,
    ) -> list[M]:
        """A create in the form the service takes (see the module docstring).

        Sent as given (with `key`, or the derived key) unless a form is learned for `path`;
        refused as `refuses_field` describes, the same batch is sent once more in the learned
        form with the key derived from the rewritten body, and on success the form is
        remembered: later creates send it directly, again with keys derived from the
        rewritten body. Every other failure, and the resend's, is raised as is.
        """
        body = to_json_value(elements)
        if not isinstance(body, list) or path not in LEARNABLE or not carries_field(path, body):
            return await self._requester.create(path, body, model, key)
        field, form = LEARNABLE[path]
        if self.body_forms.get(path) == form:
            return await self._send_rewritten(path, form, body, model)
        try:
            return await self._requester.create(path, body, model, key)
        except (InvalidRequestError, UnprocessableEntityError) as exc:
            if not refuses_field(exc, path, body):
                raise
            logger.warning(
                "POST %s: the service refused %s (%s); sending the batch once more %s",
                path,
                field,
                exc.code or exc.status,
                "as external_references" if form == ARRAY_FORM else "without it",
            )
        records = await self._send_rewritten(path, form, body, model)
        self.body_forms[path] = form
        how = (
            f"`{ARRAY_FORM}: [ref]` was sent instead"
            if form == ARRAY_FORM
            else f"instructions were sent without `{SINGLE_FORM}`"
        )
        self.notes.append(
            f"POST {path}: the service does not take `{field}`; {how}, and the organization's "
            "binding keeps this form for the next nights"
        )
        return records

    async def _send_rewritten(
        self, path: str, form: str, body: list[Any], model: type[M]
    ) -> list[M]:
        rewritten = rewrite(form, body)
        key = idempotency_key(self._org_id, "POST", path, rewritten)
        return await self._requester.create(path, rewritten, model, key)

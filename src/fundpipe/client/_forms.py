"""Create bodies in the form the service takes, where the interface leaves the body unshown.

What the client sends first: the interface's content in the public docs' field names — except
where the interface is silent and the public description (an older OpenAPI description of the
same service) forbids a field: contacts go without `external_reference` and payment
instructions without `external_reference` (fundpipe keeps its own references for those in the
ledger, and knows them again by email and by content fingerprint). Where the public
description allows fewer fields than the client sends, a strict service refuses them; the
client then learns, once per create path and field:

| path | field sent first | learned form (in `body_forms[path]`) |
|---|---|---|
| `/v1/entities`, `/v1/contacts` | `external_reference` (string) | `external_references`: `external_references: [ref]` |
| `/v1/entities` | `external_type` | `no_external_type`: the field left out |
| `/v1/payment_instructions` | `payment_instructions[].external_reference` | `no_external_reference`: the field left out |

A create refused with 400 or 422 is sent once more in the learned form(s) when the refusal
names a field it sent, whatever the error's shape (`fundpipe.client._error_map` reads the
service's error object, the older form's `param`, a problem+json `detail`, a `validation[]`
or `errors[]` list, plain text): in a parameter's name, in its reason, or in the message (and
not for a value-only reason such as an empty string). A refusal naming no field at all while
the body carried `external_reference` (a validating gateway's 422 may name nothing) counts for
that field; an entity or contact refusal naming `external_references` as missing counts too.
Anything else is raised as is.

Never twice: creates are atomic, so a batch refused with 400/422 created nothing; the resend
carries the Idempotency-Key derived from the rewritten body (`idempotency_key(org, "POST",
path, rewritten)`), so a re-run of the same batch in the learned form sends that same key and
gets the stored answer, not a second create. The learned forms are kept in the organization's
binding (`fundpipe.submit.binding.remember_body_forms`; several forms of one path joined by
`+`), so the next night starts with them.
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
#: The learned form of entities whose caller type the service refuses: sent without it.
NO_EXTERNAL_TYPE = "no_external_type"
EXTERNAL_TYPE = "external_type"
#: Separates several learned forms of one path in `body_forms`.
FORM_SEPARATOR = "+"

#: Create path → (the field the client may send, the form it learns when that is refused),
#: the first one the suspect of a refusal that names no field.
LEARNABLE: dict[str, tuple[tuple[str, str], ...]] = {
    "/v1/entities": ((SINGLE_FORM, ARRAY_FORM), (EXTERNAL_TYPE, NO_EXTERNAL_TYPE)),
    "/v1/contacts": ((SINGLE_FORM, ARRAY_FORM),),
    "/v1/payment_instructions": ((SINGLE_FORM, NO_REFERENCE),),
}

#: Codes that say a value is wrong, not that the field is unwelcome: no other form helps.
_VALUE_CODES = frozenset(
    {"parameter_invalid_string", "parameter_invalid_string_empty", "parameter_invalid_integer"}
)
_ANY_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _names(text: str, field: str) -> bool:
    """Whether `text` names `field` as a whole word (`external_reference` is not named by
    `external_references`)."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(field)}(?![A-Za-z0-9_])", text) is not None


def _instructions(element: Any) -> list[Any]:
    items = element.get("payment_instructions") if isinstance(element, dict) else None
    return items if isinstance(items, list) else []


def carries(path: str, body: list[Any], field: str) -> bool:
    """Whether the create body for `path` carries `field` (in an instruction, for payment
    instructions)."""
    if path == "/v1/payment_instructions":
        return any(
            isinstance(item, dict) and field in item
            for element in body
            for item in _instructions(element)
        )
    return any(isinstance(e, dict) and field in e for e in body)


def carries_field(path: str, body: list[Any]) -> bool:
    """Whether the create body for `path` carries a field the client may have to give up."""
    return path in LEARNABLE and any(carries(path, body, f) for f, _ in LEARNABLE[path])


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


def without_external_type(body: list[Any]) -> list[Any]:
    """The entities body with `external_type` left out of every element."""
    return [
        {k: v for k, v in e.items() if k != EXTERNAL_TYPE} if isinstance(e, dict) else e
        for e in body
    ]


def rewrite(form: str, body: list[Any]) -> list[Any]:
    """`body` in the learned `form` (several forms joined by `+` are applied in turn)."""
    for one in split_forms(form):
        if one == ARRAY_FORM:
            body = to_array_form(body)
        elif one == NO_REFERENCE:
            body = without_instruction_references(body)
        elif one == NO_EXTERNAL_TYPE:
            body = without_external_type(body)
        else:
            raise ValueError(f"unknown body form {one!r}")
    return body


def split_forms(form: str) -> list[str]:
    """The forms of a `body_forms` value (`"a+b"` → `["a", "b"]`)."""
    return [f for f in form.split(FORM_SEPARATOR) if f]


def _known_forms(path: str, form: str) -> str:
    """`form` with only the forms `path` can learn, in `LEARNABLE` order ("" when none)."""
    wanted = set(split_forms(form))
    return FORM_SEPARATOR.join(f for _, f in LEARNABLE.get(path, ()) if f in wanted)


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


def refused_fields(error: APIError, path: str, body: list[Any]) -> list[str]:
    """The learnable fields of `path` that `body` carries and `error` refuses (see the module
    docstring), in `LEARNABLE` order; empty when the refusal is about something else."""
    if error.status not in (400, 422) or error.code == "idempotency_mismatch":
        return []
    if path not in LEARNABLE:
        return []
    candidates = [(f, form) for f, form in LEARNABLE[path] if carries(path, body, f)]
    if not candidates:
        return []
    refused: list[str] = []
    for field, form in candidates:
        for param in error.invalid_params:
            code = param.code or error.code or ""
            named = _field(param.name) == field or _names(param.reason, field)
            if named and code not in _VALUE_CODES:
                refused.append(field)
                break
            if (
                form == ARRAY_FORM
                and _field(param.name) == ARRAY_FORM
                and "parameter_missing" in (code, error.code)
            ):
                refused.append(field)
                break
        else:
            if _names(error.message, field) and (error.code or "") not in _VALUE_CODES:
                refused.append(field)
    if refused or any(_field(p.name) for p in error.invalid_params):
        return refused
    # Names nothing: the first learnable field the body carried is the suspect, unless the
    # message names another field the body carried.
    first = candidates[0][0]
    if first != LEARNABLE[path][0][0]:
        return []
    reasons = " ".join([error.message, *(p.reason for p in error.invalid_params)])
    mentioned = set(_ANY_WORD.findall(reasons)) & (_body_fields(body) - {first})
    return [] if mentioned else [first]


def refuses_field(error: APIError, path: str, body: list[Any]) -> bool:
    """Whether `error` refuses a learnable field of `path` that `body` carries."""
    return bool(refused_fields(error, path, body))


def refuses_single_form(error: APIError) -> bool:
    """Whether `error` refuses an entity's `external_reference` (see `refused_fields`)."""
    return SINGLE_FORM in refused_fields(error, "/v1/entities", [{SINGLE_FORM: ""}])


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
        #: Create path → the form(s) the service was found to want (`LEARNABLE`; `+` joins).
        self.body_forms: dict[str, str] = {}
        for path, form in (learned or {}).items():
            known = _known_forms(path, form)
            if known:
                self.body_forms[path] = known
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
        refused as `refused_fields` describes, the same batch is sent once more in the learned
        form(s) with the key derived from the rewritten body, and on success the forms are
        remembered: later creates send them directly, again with keys derived from the
        rewritten body. Every other failure, and a resend's, is raised as is.
        """
        body = to_json_value(elements)
        if not isinstance(body, list) or not carries_field(path, body):
            return await self._requester.create(path, body, model, key)
        learned = self.body_forms.get(path, "")
        sent = rewrite(learned, body) if learned else body
        if learned and not carries_field(path, sent):
            return await self._send(path, sent, model, None)
        new_forms: list[str] = []
        for _ in LEARNABLE[path]:
            try:
                records = await self._send(path, sent, model, None if learned else key)
            except (InvalidRequestError, UnprocessableEntityError) as exc:
                refused = refused_fields(exc, path, sent)
                if not refused:
                    raise
                forms = [form for f, form in LEARNABLE[path] if f in refused]
                logger.warning(
                    "POST %s: the service refused %s (%s); sending the batch once more without",
                    path,
                    ", ".join(refused),
                    exc.code or exc.status,
                )
                new_forms += forms
                learned = _known_forms(path, FORM_SEPARATOR.join([learned, *forms]))
                sent = rewrite(learned, body)
                continue
            break
        else:
            records = await self._send(path, sent, model, None)
        if new_forms:
            self.body_forms[path] = learned
            for form in new_forms:
                self.notes.append(_note(path, form))
        return records

    async def _send(self, path: str, body: list[Any], model: type[M], key: str | None) -> list[M]:
        if key is None:
            key = idempotency_key(self._org_id, "POST", path, body)
        return await self._requester.create(path, body, model, key)


def _note(path: str, form: str) -> str:
    field = next(f for f, learned in LEARNABLE[path] if learned == form)
    how = (
        f"`{ARRAY_FORM}: [ref]` was sent instead"
        if form == ARRAY_FORM
        else f"it was left out (fundpipe keeps its own `{field}` in the ledger and sheets)"
    )
    return (
        f"POST {path}: the service does not take `{field}`; {how}, and the organization's "
        "binding keeps this form for the next nights"
    )

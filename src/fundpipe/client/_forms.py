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


class ReferenceForm:
    """The reference form one client sends to each create path, learned from the service."""

    def __init__(self, requester: Requester, org_id: str | None) -> None:
        """Send through `requester`; derive keys for `org_id`."""
        self._requester = requester
        self._org_id = org_id
        #: Create path → `external_references` once the service was found to want it.
        self.body_forms: dict[str, str] = {}
        #: Plain-language notes for the run summary.
        self.notes: list[str] = []

    async def create(
        self,
        path: str,
        elements: Sequence[Mapping[str, Any] | BaseModel],
        model: type[M],
        key: str | None,
    ) -> list[M]:
        """A create whose elements may carry `external_reference`, in the form the service takes.

        Sent as given (with `key`, or the derived key) until the service refuses
        `external_reference` (400/422 `parameter_unknown` or naming the field); then the same
        batch is sent once more as `external_references: [ref]` with the key derived from that
        rewritten body, and on success the array form is remembered for `path`: later creates
        send it directly, again with keys derived from the rewritten body. A refused batch
        created nothing (creates are atomic), so the one resend cannot create twice; every
        other failure is raised as is.
        """
        body = to_json_value(elements)
        if not isinstance(body, list) or not uses_single_form(body):
            return await self._requester.create(path, body, model, key)
        if self.body_forms.get(path) == ARRAY_FORM:
            return await self._send_array_form(path, body, model)
        try:
            return await self._requester.create(path, body, model, key)
        except (InvalidRequestError, UnprocessableEntityError) as exc:
            if not refuses_single_form(exc):
                raise
            logger.warning(
                "POST %s: the service refused %s (%s); sending %s instead",
                path,
                SINGLE_FORM,
                exc.code or exc.status,
                ARRAY_FORM,
            )
        records = await self._send_array_form(path, body, model)
        if self.body_forms.get(path) != ARRAY_FORM:
            self.body_forms[path] = ARRAY_FORM
            self.notes.append(
                f"POST {path}: the service does not take `{SINGLE_FORM}`; "
                f"`{ARRAY_FORM}: [ref]` was sent instead for the rest of the run"
            )
        return records

    async def _send_array_form(self, path: str, body: list[Any], model: type[M]) -> list[M]:
        array_body = to_array_form(body)
        key = idempotency_key(self._org_id, "POST", path, array_body)
        return await self._requester.create(path, array_body, model, key)

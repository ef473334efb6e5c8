"""Decoding the service's answers: the JSON body, a list envelope, a typed record.

Part of the request chain (`fundpipe.client._requester.Requester` decodes every answer here);
each failure is a `ResponseDecodeError` naming the request, never the offending values.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any, NotRequired, TypeVar

import httpx
import orjson
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, create_model
from typing_extensions import TypedDict

from fundpipe.client._error_map import request_id_of
from fundpipe.client._errors import ResponseDecodeError
from fundpipe.client._models import Distribution

M = TypeVar("M", bound=BaseModel)


def json_of(response: httpx.Response) -> Any:
    """The answer's body as JSON, or a `ResponseDecodeError` naming the request."""
    # orjson decodes a 100-distribution page (10k nested payments) ~3× faster; what it
    # refuses (integers past 64 bits, NaN, other encodings) goes to the standard library,
    # which accepts the same documents as before or raises as before
    try:
        return orjson.loads(response.content)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(response.content)
    except (ValueError, UnicodeDecodeError):
        raise ResponseDecodeError(
            f"{response.request.method} {response.request.url.path}: "
            f"answer {response.status_code} is not valid JSON",
            status=response.status_code,
            request_id=request_id_of(response),
            body=response.content,
        ) from None


def list_envelope(response: httpx.Response, what: str) -> dict[str, Any]:
    """The answer's list envelope (a JSON object with a `data` array), or the error."""
    envelope = json_of(response)
    if not isinstance(envelope, dict) or not isinstance(envelope.get("data"), list):
        raise ResponseDecodeError(
            f"{what}: answer is not a list envelope",
            status=response.status_code,
            request_id=request_id_of(response),
            body=response.content,
        )
    return envelope


def parse_record(model: type[M], data: Any, response: httpx.Response | None = None) -> M:
    """`data` as a `model`, or a `ResponseDecodeError` listing where it does not fit."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        # Only locations and messages: the offending input values stay out of the error.
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()[:5]
        )
        raise ResponseDecodeError(
            f"unexpected {model.__name__} record ({exc.error_count()} problems: {problems})",
            status=response.status_code if response is not None else 200,
            request_id=request_id_of(response) if response is not None else None,
            body=response.content if response is not None else b"",
        ) from None


@cache
def _envelope(model: type[BaseModel]) -> type[BaseModel]:
    """A list envelope whose `data` are `model` records (the envelope's other keys ignored)."""
    return create_model(
        f"{model.__name__}Envelope",
        __config__=ConfigDict(extra="ignore"),
        data=(list[model], ...),  # type: ignore[valid-type]
    )


def parse_list(model: type[M], response: httpx.Response, what: str) -> list[M]:
    """The records of a list-envelope answer as `model`s, validated straight from its bytes.

    No decoded copy of the answer is built (a big create's answer is 100k nested payments).
    Whatever does not validate that way takes the step-by-step path (`list_envelope`, then
    `parse_record` per item), which raises the same errors as before, naming the request.
    """
    try:
        return _envelope(model).model_validate_json(response.content).data  # type: ignore[attr-defined,no-any-return]
    except ValidationError:
        pass
    data = list_envelope(response, what)["data"]
    records = []
    # each decoded item is dropped once parsed: a big answer is not held twice
    for i, item in enumerate(data):
        records.append(parse_record(model, item, response))
        data[i] = None
    return records


def ids_of_list(response: httpx.Response, what: str) -> list[str]:
    """The `id` of each record of a list-envelope answer, read without building a model.

    For answers of which only the ids are kept (a contact association's); a record without a
    text `id` is a `ResponseDecodeError` naming the request, like any answer that does not fit.
    """
    data = list_envelope(response, what)["data"]
    ids = [item.get("id") if isinstance(item, dict) else None for item in data]
    if not all(isinstance(i, str) and i for i in ids):
        raise ResponseDecodeError(
            f"{what}: a record of the answer has no id",
            status=response.status_code,
            request_id=request_id_of(response),
            body=response.content,
        )
    return ids  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class CreatedDistribution:
    """A created distribution as a create's answer gives it, read for its ids only: no
    `Distribution` (and none of its nested payments) is built."""

    id: str
    external_reference: str | None
    #: the ids of the payments of the answer's first page, in the answer's order
    payment_ids: list[str]
    #: the payments go on past that page (`next_page_url`): list them for the others
    more_payments: bool


class _PaymentId(TypedDict):
    id: str


class _PaymentIds(TypedDict):
    data: NotRequired[list[_PaymentId] | None]
    next_page_url: NotRequired[str | None]


class _DistributionIds(TypedDict):
    id: str
    external_reference: NotRequired[str | None]
    payments: NotRequired[_PaymentIds | None]


class _DistributionIdsEnvelope(TypedDict):
    data: list[_DistributionIds]


@cache
def _distribution_ids() -> TypeAdapter[_DistributionIdsEnvelope]:
    # every other field of the answer is skipped by the parser, never made into an object
    return TypeAdapter(_DistributionIdsEnvelope)


def distribution_ids_of_list(response: httpx.Response, what: str) -> list[CreatedDistribution]:
    """The created distributions of a distributions create's answer, read for their ids and
    references only (a big create's answer is 100 distributions of 100 nested payments).

    An answer that does not read so is read in full as `Distribution`s (`parse_list`), which
    raises the `ResponseDecodeError` it always did, naming the request.
    """
    try:
        envelope = _distribution_ids().validate_json(response.content)
    except ValidationError:
        return [_created(d) for d in parse_list(Distribution, response, what)]
    out = []
    for d in envelope["data"]:
        payments = d.get("payments") or {}
        out.append(
            CreatedDistribution(
                d["id"],
                d.get("external_reference"),
                [p["id"] for p in payments.get("data") or ()],
                bool(payments.get("next_page_url")),
            )
        )
    return out


def _created(d: Distribution) -> CreatedDistribution:
    page = d.payments
    return CreatedDistribution(
        d.id,
        d.external_reference,
        [p.id for p in page.data] if page else [],
        bool(page and page.next_page_url),
    )

"""A validating proxy on the service's older public OpenAPI description (test helper).

`PublicDescriptionProxy` wraps a transport (the sandbox's ASGI transport) and refuses every
request whose JSON body the public description does not allow (`public_description.yaml`
beside this file: an excerpt, with the interface's amendments marked), as a validating
gateway such as Prism does: 422, `application/problem+json`, one `validation[]` entry per
violation (`location`, `code`, `message: "… must NOT have additional properties; found 'x'"`).
Everything else goes through untouched. `refused` keeps what it refused, `checked` how many
bodies it let through per path.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

DESCRIPTION = Path(__file__).with_name("public_description.yaml")
_URI = "urn:fundpipe:public-description"


@cache
def public_description() -> dict[str, Any]:
    """The public description's excerpt as a dict."""
    document: dict[str, Any] = yaml.safe_load(DESCRIPTION.read_text(encoding="utf-8"))
    return document


@cache
def _validators() -> dict[tuple[str, str], Draft202012Validator]:
    """(method, path) → a validator of that operation's JSON request body."""
    document = public_description()
    registry = Registry().with_resource(
        _URI, Resource.from_contents(document, default_specification=DRAFT202012)
    )
    out = {}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            content = operation.get("requestBody", {}).get("content", {})
            if "application/json" not in content:
                continue
            pointer = "/".join(
                p.replace("~", "~0").replace("/", "~1")
                for p in ("paths", path, method, "requestBody", "content", "application/json")
            )
            schema = {"$ref": f"{_URI}#/{pointer}/schema"}
            out[(method.upper(), path)] = Draft202012Validator(schema, registry=registry)
    return out


def _leaves(error: ValidationError) -> Iterator[ValidationError]:
    """The innermost errors (a `oneOf` of instruction inputs reports each variant's)."""
    if error.context:
        for inner in error.context:
            yield from _leaves(inner)
    else:
        yield error


def _entries(error: ValidationError) -> list[dict[str, Any]]:
    """`validation[]` entries for one error, worded as Prism (AJV) words them."""
    location = ["body", *(str(p) for p in error.absolute_path)]
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        return [
            {
                "location": location,
                "severity": "Error",
                "code": "additionalProperties",
                "message": f"Request body must NOT have additional properties; found '{name}'",
            }
            for name in sorted(set(error.instance) - allowed)
        ]
    return [
        {
            "location": location,
            "severity": "Error",
            "code": str(error.validator),
            "message": f"Request body {error.message}",
        }
    ]


@dataclass(frozen=True)
class Refusal:
    """One request the proxy refused: where, and its `validation[]` entries."""

    method: str
    path: str
    validation: tuple[dict[str, Any], ...]

    def unexpected(self) -> set[str]:
        """The additional properties it named."""
        return {
            v["message"].rsplit("'", 2)[-2]
            for v in self.validation
            if v["code"] == "additionalProperties"
        }


class PublicDescriptionProxy(httpx.AsyncBaseTransport):
    """Refuse what the public description forbids, pass the rest to `inner`."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.refused: list[Refusal] = []
        self.checked: Counter[str] = Counter()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        validator = _validators().get((request.method, request.url.path))
        if validator is None:
            return await self.inner.handle_async_request(request)
        raw = await request.aread()
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        entries = [
            e
            for error in validator.iter_errors(body)
            for leaf in _leaves(error)
            for e in _entries(leaf)
        ]
        if not entries:
            self.checked[request.url.path] += 1
            return await self.inner.handle_async_request(request)
        self.refused.append(Refusal(request.method, request.url.path, tuple(entries)))
        problem = {
            "type": "https://stoplight.io/prism/errors#UNPROCESSABLE_ENTITY",
            "title": "Invalid request",
            "status": 422,
            "detail": "Your request is not valid and no HTTP validation response was found in "
            "the spec, so Prism is generating this error for you.",
            "validation": entries,
        }
        return httpx.Response(
            422,
            headers={"content-type": "application/problem+json"},
            content=json.dumps(problem).encode(),
            request=request,
        )

    async def aclose(self) -> None:
        """Close the wrapped transport."""
        await self.inner.aclose()

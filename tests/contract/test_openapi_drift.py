"""`schemas/openapi.yaml` and the sandbox cannot drift apart unnoticed.

The document must be valid OpenAPI 3.1, list exactly the sandbox's routes (service and control
routes alike), keep the interface's error vocabulary, and pair every documented error status
with the type and codes of docs/architecture.md ("Statuses").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from openapi_spec_validator import validate as validate_openapi

from fundpipe.sandbox import SandboxConfig, create_app
from fundpipe.sandbox._validation import EMAIL_PATTERN

OPENAPI_PATH = Path(__file__).resolve().parents[2] / "schemas" / "openapi.yaml"
HTTP_METHODS = frozenset({"get", "put", "post", "delete", "patch", "head", "options", "trace"})

#: The interface's error `code` values (service-interface.md, "Errors"), in its order.
INTERFACE_ERROR_CODES = (
    "unauthorized",
    "forbidden",
    "resource_not_found",
    "request_timeout",
    "conflict",
    "idempotency_mismatch",
    "rate_limit_exceeded",
    "internal_error",
    "not_implemented",
    "bad_gateway",
    "parameter_missing",
    "parameter_unknown",
    "parameter_invalid",
    "parameter_invalid_string",
    "parameter_invalid_string_empty",
    "parameter_invalid_integer",
    "validation_error",
)
#: The interface's error `type` values, in its order.
INTERFACE_ERROR_TYPES = (
    "authentication_error",
    "permission_error",
    "invalid_request_error",
    "not_found_error",
    "request_timeout_error",
    "conflict_error",
    "unprocessable_entity_error",
    "rate_limit_error",
    "api_error",
)
VALIDATION_CODES = frozenset(
    {
        "parameter_missing",
        "parameter_unknown",
        "parameter_invalid",
        "parameter_invalid_string",
        "parameter_invalid_string_empty",
        "parameter_invalid_integer",
    }
)
#: docs/architecture.md "Statuses": status → (type, codes) of the service's error object.
STATUS_TABLE: dict[int, tuple[str, frozenset[str]]] = {
    400: ("invalid_request_error", VALIDATION_CODES),
    401: ("authentication_error", frozenset({"unauthorized"})),
    403: ("permission_error", frozenset({"forbidden"})),
    404: ("not_found_error", frozenset({"resource_not_found"})),
    408: ("request_timeout_error", frozenset({"request_timeout"})),
    409: ("conflict_error", frozenset({"conflict"})),
    413: ("invalid_request_error", frozenset({"parameter_invalid"})),
    415: ("invalid_request_error", frozenset({"parameter_invalid"})),
    422: ("unprocessable_entity_error", frozenset({"idempotency_mismatch", "validation_error"})),
    429: ("rate_limit_error", frozenset({"rate_limit_exceeded"})),
    500: ("api_error", frozenset({"internal_error"})),
    502: ("api_error", frozenset({"bad_gateway"})),
    503: ("api_error", frozenset({"internal_error"})),
}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    """The parsed `schemas/openapi.yaml`."""
    loaded: dict[str, Any] = yaml.safe_load(OPENAPI_PATH.read_text(encoding="utf-8"))
    return loaded


def _resolve(document: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target: Any = document
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def _operations(document: dict[str, Any], *, sandbox: bool | None = None) -> set[tuple[str, str]]:
    found = set()
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method not in HTTP_METHODS:
                continue
            if sandbox is not None and ("sandbox" in operation.get("tags", ())) != sandbox:
                continue
            found.add((method.upper(), path))
    return found


def _app_routes(*, control_routes: bool) -> set[tuple[str, str]]:
    app = create_app(SandboxConfig(control_routes=control_routes))
    return {
        (method, route.path)
        for route in app.routes
        if isinstance(route, APIRoute)
        for method in route.methods
        if method != "HEAD"
    }


def test_document_is_valid_openapi_3_1(document: dict[str, Any]) -> None:
    """The contract is a valid OpenAPI 3.1 document (tools and code generators can load it)."""
    assert document["openapi"].startswith("3.1.")
    validate_openapi(document)


def test_every_sandbox_route_is_documented_and_nothing_else(document: dict[str, Any]) -> None:
    """Service and control routes of the sandbox are exactly the document's operations."""
    assert _app_routes(control_routes=True) == _operations(document)


def test_without_control_routes_the_sandbox_serves_exactly_the_service_operations(
    document: dict[str, Any],
) -> None:
    """Everything tagged `sandbox` is a control route, and only control routes are."""
    assert _app_routes(control_routes=False) == _operations(document, sandbox=False)
    assert all(path.startswith("/_sandbox/") for _, path in _operations(document, sandbox=True))


def test_sandbox_publishes_no_generated_openapi_or_docs() -> None:
    """The contract is schemas/openapi.yaml; FastAPI's generated description is not served."""
    with TestClient(create_app(SandboxConfig())) as client:
        for path in ("/openapi.json", "/docs", "/redoc"):
            assert client.get(path).status_code == 404, path


def test_error_vocabulary_is_the_interfaces(document: dict[str, Any]) -> None:
    """Error codes and types are exactly the interface's lists."""
    schemas = document["components"]["schemas"]
    assert tuple(schemas["ErrorCode"]["enum"]) == INTERFACE_ERROR_CODES
    assert tuple(schemas["ErrorType"]["enum"]) == INTERFACE_ERROR_TYPES


def _error_constraints(document: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    schema = _resolve(document, response["content"]["application/json"]["schema"])
    merged: dict[str, Any] = {}
    for part in schema.get("allOf", [schema]):
        merged.update(_resolve(document, part).get("properties", {}))
    return merged


def test_every_documented_error_status_pairs_type_and_codes_as_decided(
    document: dict[str, Any],
) -> None:
    """Each operation's error responses carry the type and codes of the status table."""
    checked = 0
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method not in HTTP_METHODS or path == "/oauth/token":
                continue
            for status_text, response in operation["responses"].items():
                status = int(status_text)
                if status < 400:
                    continue
                constraints = _error_constraints(document, _resolve(document, response))
                where = f"{method.upper()} {path} {status}"
                kind, codes = STATUS_TABLE[status]
                assert constraints["type"] == {"const": kind}, where
                code = constraints["code"]
                assert set(code.get("enum", [code.get("const")])) == codes, where
                assert constraints["status"] == {"const": status}, where
                checked += 1
    assert checked > 100


def test_every_operation_documents_request_id_and_its_errors(document: dict[str, Any]) -> None:
    """Every response names `Request-Id`; service operations list 401/403/429/5xx; 429 has Retry-After."""
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method not in HTTP_METHODS:
                continue
            responses = operation["responses"]
            for status, response in responses.items():
                headers = _resolve(document, response).get("headers", {})
                assert "Request-Id" in headers, f"{method} {path} {status}"
            if "sandbox" in operation.get("tags", ()):
                continue
            expected = {"408", "429", "500", "502", "503"}
            if path != "/oauth/token":
                expected |= {"400", "401", "403"}
            assert expected <= set(responses), f"{method} {path}"
            retry_after = _resolve(document, responses["429"])["headers"]["Retry-After"]
            assert _resolve(document, retry_after)["required"] is True
            if method == "post" and path != "/oauth/token":
                assert {"409", "413", "415", "422"} <= set(responses), f"{method} {path}"
                names = [_resolve(document, p)["name"] for p in operation["parameters"]]
                assert "Idempotency-Key" in names, f"{method} {path}"


def test_contact_email_pattern_is_the_sandboxs(document: dict[str, Any]) -> None:
    """ContactCreate.email documents exactly the pattern the sandbox enforces."""
    email = document["components"]["schemas"]["ContactCreate"]["properties"]["email"]
    assert email["pattern"] == EMAIL_PATTERN.pattern

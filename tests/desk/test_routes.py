"""Every route in the desk's own /openapi.json, generated from it (a new route is covered
without a new test): signed out it gives no data, another organization's member gets 404, a
state change without the CSRF token gets 403, and the headers are on every answer."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from desk_world import DeskWorld, csrf_of, desk_over, sign_in
from fastapi.testclient import TestClient

from fundpipe.desk import create_app

UNSAFE = {"post", "put", "patch", "delete"}
#: sign-in through a provider configured, so its routes are served and covered too (no test
#: here reaches the provider: its discovery is read only when a sign-in starts)
OIDC = {
    "oidc_issuer": "http://127.0.0.1:9",
    "oidc_client_id": "desk",
    "oidc_client_secret": "not-a-real-secret",
    "url": "http://127.0.0.1",
}
HTML = {"accept": "text/html"}


def _routes(world: DeskWorld) -> list[tuple[str, str, str]]:
    """(method, path, access) of every operation in the signed-in description."""
    with TestClient(create_app(desk_over(world, **OIDC)), base_url="http://127.0.0.1") as client:
        sign_in(client, "maria@example.com")
        described = client.get("/openapi.json").json()
    return [
        (method, path, op["x-desk-access"])
        for path, ops in described["paths"].items()
        for method, op in ops.items()
    ]


def _filled(path: str, world: DeskWorld, org: str = "org_demo") -> str:
    values = {
        "org_id": org,
        "exception_id": world.open_ids[org][0],
        "token": "not-the-token",
        "period": "2026-11",
        "upload_id": "0123456789ab",
    }
    return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], path)


@pytest.fixture(scope="session")
def routes(desk_world: DeskWorld) -> list[tuple[str, str, str]]:
    return _routes(desk_world)


def _flat(routes: Any) -> Any:
    """The app's routes, with each included router's own (FastAPI keeps them behind one)."""
    for route in routes:
        included = getattr(route, "original_router", None)
        yield from _flat(included.routes) if included is not None else (route,)


def test_the_description_lists_every_route_of_the_app(
    routes: list[tuple[str, str, str]], desk_world: DeskWorld
) -> None:
    app = create_app(desk_over(desk_world, **OIDC))
    served = {
        (method.lower(), route.path)  # type: ignore[attr-defined]
        for route in _flat(app.routes)
        for method in getattr(route, "methods", ()) or ()
        if method != "HEAD"
    }
    assert served == {(m, p) for m, p, _ in routes}
    assert {a for *_, a in routes} == {"public", "signed-in", "member"}
    assert ("get", "/orgs/{org_id}/exceptions", "member") in routes
    assert ("get", "/oidc/callback", "public") in routes


def test_the_description_is_for_the_signed_in_only(
    client_of: Callable[..., TestClient], desk_world: DeskWorld
) -> None:
    assert client_of(desk_world, **OIDC).get("/openapi.json").status_code == 401


def test_signed_out_every_page_gives_no_data(
    routes: list[tuple[str, str, str]], client_of: Callable[..., TestClient], desk_world: DeskWorld
) -> None:
    client = client_of(desk_world, **OIDC)
    checked = 0
    for method, path, access in routes:
        if access == "public":
            continue
        url = _filled(path, desk_world)
        token = csrf_of(client) if method in UNSAFE else None
        data = {"csrf_token": token, "note": "x"} if token else None
        page = client.request(method, url, headers=HTML, data=data, follow_redirects=False)
        assert page.status_code in {303, 401}, (method, url, page.status_code)
        if page.status_code == 303:
            assert page.headers["location"].startswith("/sign-in")
        api = client.request(method, url, data=data, follow_redirects=False)
        assert api.status_code == 401, (method, url)
        assert "EX-" not in page.text + api.text
        checked += 1
    assert checked >= 3


@pytest.mark.parametrize("org", ["org_demo", "org_guessed"])
def test_another_organizations_member_gets_404_everywhere(
    org: str,
    routes: list[tuple[str, str, str]],
    client_of: Callable[..., TestClient],
    own_world: DeskWorld,
) -> None:
    client = client_of(own_world, **OIDC)
    token = sign_in(client, "bea@example.com")  # admin of org_demob only
    own_world.open_ids.setdefault("org_guessed", own_world.open_ids["org_demo"])
    member_routes = [(m, p) for m, p, a in routes if a == "member"]
    assert member_routes
    for method, path in member_routes:
        url = _filled(path, own_world, org)
        data = {"csrf_token": token, "note": "mine now"} if method in UNSAFE else None
        answer = client.request(method, url, headers=HTML, data=data, follow_redirects=False)
        assert answer.status_code == 404, (method, url, answer.status_code)
        assert "EX-" not in answer.text
    # org_demo's exceptions are all still open: bea's requests acknowledged none of them
    page = client.get("/orgs/org_demob/exceptions", headers=HTML)
    assert page.status_code == 200


def test_a_state_change_without_the_csrf_token_is_403(
    routes: list[tuple[str, str, str]], client_of: Callable[..., TestClient], own_world: DeskWorld
) -> None:
    client = client_of(own_world, **OIDC)
    token = sign_in(client, "maria@example.com")
    unsafe = [(m, p) for m, p, _ in routes if m in UNSAFE]
    assert {p for _, p in unsafe} >= {"/sign-in", "/sign-out"}
    for method, path in unsafe:
        url = _filled(path, own_world)
        for data in ({"note": "paid"}, {"note": "paid", "csrf_token": "forged"}):
            answer = client.request(method, url, data=data, follow_redirects=False)
            assert answer.status_code == 403, (method, url, data, answer.status_code)
    # nothing was acknowledged, and maria is still signed in with the same token
    page = client.get("/orgs/org_demo/exceptions", headers=HTML)
    assert all(i in page.text for i in own_world.open_ids["org_demo"])
    assert csrf_of(client, "/morning") == token


def _assert_headers(answer: Any, path: str) -> None:
    policy = answer.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy
    assert "script-src 'none'" in policy
    assert "unsafe-inline" not in policy
    assert answer.headers["referrer-policy"] == "same-origin"
    if path != "/static/desk.css":
        assert answer.headers["cache-control"] == "no-store"
    cookie = answer.headers["set-cookie"].lower()
    assert "httponly" in cookie
    assert "samesite=lax" in cookie
    assert "secure" not in cookie  # on loopback


def test_every_answer_has_the_headers(
    routes: list[tuple[str, str, str]], client_of: Callable[..., TestClient], desk_world: DeskWorld
) -> None:
    client = client_of(desk_world, **OIDC)
    sign_in(client, "maria@example.com")
    for method, path, _ in routes:
        if method in UNSAFE:
            answer = client.request(method, _filled(path, desk_world), follow_redirects=False)
            assert answer.status_code == 403  # refused, and still with the headers
        else:
            answer = client.get(_filled(path, desk_world), headers=HTML, follow_redirects=False)
        _assert_headers(answer, path)


def test_cookies_are_secure_off_loopback(
    client_of: Callable[..., TestClient], desk_world: DeskWorld
) -> None:
    client = client_of(desk_world, host="0.0.0.0")
    cookie = client.get("/sign-in").headers["set-cookie"].lower()
    assert "; secure" in cookie

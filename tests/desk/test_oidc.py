"""Sign-in through a real OpenID Connect provider started by the test (oidc-provider-mock on
loopback): the code flow with PKCE, the state checked, the ID token verified."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from desk_world import DeskWorld, csrf_of
from fastapi.testclient import TestClient
from oidc_provider_mock import User, run_server_in_thread

HTML = {"accept": "text/html"}


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    users = [User(sub="sub-maria", claims={"email": "maria@example.com", "name": "Maria Lopez"})]
    with run_server_in_thread(require_nonce=True, user_claims=users) as server:
        yield f"http://127.0.0.1:{server.server_port}"


def _desk(
    client_of: Callable[..., TestClient], world: DeskWorld, issuer: str, **more: object
) -> TestClient:
    return client_of(
        world,
        oidc_issuer=issuer,
        oidc_client_id="fundpipe-desk",
        oidc_client_secret="not-a-real-secret",
        url="http://127.0.0.1",
        **more,
    )


def _authorize(client: TestClient, sub: str = "sub-maria") -> tuple[str, str]:
    """Start at the desk, pick ``sub`` at the provider; the code and state it sends back."""
    token = csrf_of(client)
    start = client.post("/oidc/start", data={"csrf_token": token}, follow_redirects=False)
    assert start.status_code == 303
    where = start.headers["location"]
    query = parse_qs(urlsplit(where).query)
    assert query["code_challenge_method"] == ["S256"]
    assert query["nonce"]
    assert query["state"]
    back = httpx.post(where, data={"sub": sub}, follow_redirects=False)
    assert back.status_code == 302, back.text
    answer = parse_qs(urlsplit(back.headers["location"]).query)
    assert urlsplit(back.headers["location"]).path == "/oidc/callback"
    return answer["code"][0], answer["state"][0]


def test_a_person_signs_in_through_the_provider(
    client_of: Callable[..., TestClient], own_world: DeskWorld, issuer: str
) -> None:
    client = _desk(client_of, own_world, issuer)
    page = client.get("/sign-in", headers=HTML)
    assert "Sign in with your identity provider" in page.text
    assert issuer in page.headers["content-security-policy"]  # the form may go on there
    code, state = _authorize(client)
    done = client.get(f"/oidc/callback?code={code}&state={state}", follow_redirects=False)
    assert done.status_code == 303, done.text
    morning = client.get("/morning", headers=HTML)
    assert "Maria Lopez (maria@example.com)" in morning.text
    token = csrf_of(client, "/morning")
    exception_id = own_world.open_ids["org_demo"][0]
    client.post(
        f"/orgs/org_demo/exceptions/{exception_id}/acknowledge",
        data={"csrf_token": token, "note": "checked with the bank"},
    )
    from fundpipe.reconcile import history
    from fundpipe.warehouse import Warehouse

    _, events = history(
        Warehouse(own_world.org_settings("org_demo").local.warehouse_file), exception_id
    )
    assert (events[-1].by, events[-1].os_user) == (
        "Maria Lopez <maria@example.com>",
        "desk:oidc:sub-maria",
    )
    log = (own_world.data / "desk" / "desk.log").read_text()
    assert code not in log
    assert "not-a-real-secret" not in log
    assert [json.loads(x)["detail"] for x in log.splitlines() if '"signed_in"' in x] == [
        "identity provider"
    ]


def test_an_answer_with_another_state_signs_nobody_in(
    client_of: Callable[..., TestClient], desk_world: DeskWorld, issuer: str
) -> None:
    client = _desk(client_of, desk_world, issuer)
    code, _ = _authorize(client)
    refused = client.get(f"/oidc/callback?code={code}&state=forged", follow_redirects=False)
    assert refused.status_code == 400
    assert client.get("/morning", headers=HTML, follow_redirects=False).status_code == 303


def test_an_expired_id_token_signs_nobody_in(
    client_of: Callable[..., TestClient], desk_world: DeskWorld, issuer: str
) -> None:
    late = dt.timedelta(hours=3)  # the desk's clock is past the token's expiry
    client = _desk(client_of, desk_world, issuer, clock=lambda: dt.datetime.now(dt.UTC) + late)
    code, state = _authorize(client)
    refused = client.get(f"/oidc/callback?code={code}&state={state}", follow_redirects=False)
    assert refused.status_code == 401
    assert client.get("/morning", headers=HTML, follow_redirects=False).status_code == 303
    refusals = [
        json.loads(line)["detail"]
        for line in (desk_world.data / "desk" / "desk.log").read_text().splitlines()
        if '"sign_in_refused"' in line
    ]
    assert "expired" in refusals[-1]

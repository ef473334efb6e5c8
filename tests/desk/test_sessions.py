"""Sessions end: signed out, idle, or past the absolute limit; a tampered cookie is nobody's."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from desk_world import DeskWorld, sign_in
from fastapi.testclient import TestClient

from fundpipe.desk._session import COOKIE

HTML = {"accept": "text/html"}


def test_a_session_ends_idle_and_at_its_absolute_limit(
    client_of: Callable[..., TestClient], desk_world: DeskWorld
) -> None:
    now = [dt.datetime(2026, 11, 28, 9, tzinfo=dt.UTC)]
    client = client_of(desk_world, clock=lambda: now[0], idle_minutes=30, absolute_hours=2)
    sign_in(client, "maria@example.com")
    for _ in range(4):  # active every 25 minutes, for 1 h 40 min: still signed in
        now[0] += dt.timedelta(minutes=25)
        assert client.get("/morning", headers=HTML, follow_redirects=False).status_code == 200
    now[0] += dt.timedelta(minutes=25)  # 2 h 5 min after signing in
    assert client.get("/morning", headers=HTML, follow_redirects=False).status_code == 303
    sign_in(client, "maria@example.com")
    now[0] += dt.timedelta(minutes=31)
    answer = client.get("/morning", headers=HTML, follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/sign-in?next=/morning"


def test_sign_out_ends_the_session_and_a_tampered_cookie_is_nobody(
    client_of: Callable[..., TestClient], desk_world: DeskWorld
) -> None:
    client = client_of(desk_world)
    token = sign_in(client, "maria@example.com")
    cookie = client.cookies[COOKIE]
    out = client.post("/sign-out", data={"csrf_token": token}, follow_redirects=False)
    assert out.status_code == 303
    assert client.get("/morning", headers=HTML, follow_redirects=False).status_code == 303
    client.cookies.clear()
    client.cookies.set(COOKIE, cookie[:-2] + ("AA" if not cookie.endswith("AA") else "BB"))
    assert client.get("/morning", headers=HTML, follow_redirects=False).status_code == 303
    log = (desk_world.data / "desk" / "desk.log").read_text()
    assert cookie not in log
    assert token not in log

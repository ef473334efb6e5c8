"""Walking a list one page ahead (`raw_pages(..., ahead=True)`, the sync's distributions walk).

The next page is asked for as soon as its URL can be read from the tail of the current page's
body, before that body is decoded. What a user of the walk must still get: exactly the pages of
the plain walk, in order, with the same checks; a wrong guess costs one request and ends the
guessing; a walk stopped early costs one request more, none when its consumer says beforehand
that it may stop; an error of the page asked for early is the walk's error.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import respx

from fundpipe.client import errors

PAGES = 5


def _page(n: int, *, decoy: bool = False) -> bytes:
    """Page `n` of PAGES (ids thing_<n>_<i>); `decoy`: the envelope's own `next_page_url`
    comes first and the body's tail holds a nested list's URL instead."""
    following = f"/v1/things?limit=3&page=c{n + 1}" if n < PAGES else None
    data = [{"id": f"thing_{n}_{i}", "n": n} for i in range(3)]
    if decoy:
        data[-1]["notes"] = {"object": "list", "data": [], "next_page_url": "/v1/things/x/notes"}
        envelope = {"next_page_url": following, "has_more": following is not None, "data": data}
    else:
        envelope = {"object": "list", "data": data, "has_more": following is not None}
        envelope["next_page_url"] = following
    return json.dumps(envelope).encode()


def _serve(service: respx.Router, page: Callable[[int], bytes]) -> list[str]:
    """Serve PAGES pages of /v1/things; the list of cursors asked for, in order."""
    asked: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        cursor = request.url.params.get("page", "c1")
        asked.append(cursor)
        return httpx.Response(200, content=page(int(cursor[1:])))

    service.get("/v1/things").mock(side_effect=answer)
    return asked


async def _walk(client: Any, *, ahead: bool) -> list[list[str]]:
    pages = client.raw_pages("/v1/things", {"limit": 3}, ahead=ahead)
    return [[t["id"] for t in page["data"]] async for page in pages]


async def test_the_pages_ahead_are_the_pages_of_the_plain_walk(client, service):
    asked = _serve(service, _page)
    plain = await _walk(client, ahead=False)
    plain_asked = list(asked)
    asked.clear()
    assert await _walk(client, ahead=True) == plain
    assert len(plain) == PAGES
    assert asked == plain_asked  # the same requests, none twice


async def test_a_wrong_guess_costs_one_request_and_ends_the_guessing(client, service):
    notes = service.get("/v1/things/x/notes").mock(
        return_value=httpx.Response(200, json={"object": "list", "data": [], "has_more": False})
    )
    asked = _serve(service, lambda n: _page(n, decoy=True))
    ids = await _walk(client, ahead=True)
    assert [page[0] for page in ids] == [f"thing_{n}_0" for n in range(1, PAGES + 1)]
    assert asked == [f"c{n}" for n in range(1, PAGES + 1)]
    assert notes.call_count == 1  # guessed once, wrong: no more guesses


async def test_a_walk_stopped_early_costs_one_request_more_unless_it_says_so(client, service):
    asked = _serve(service, _page)
    for ahead, cost in ((True, ["c1", "c2"]), (lambda: False, ["c1"])):
        asked.clear()
        pages = client.raw_pages("/v1/things", {"limit": 3}, ahead=ahead)
        first = await anext(pages)
        await pages.aclose()
        assert first["data"][0]["id"] == "thing_1_0"
        assert asked == cost


async def test_an_incomplete_list_still_raises(client, service):
    service.get("/v1/things").mock(
        return_value=httpx.Response(200, json={"data": [{"id": "t"}], "has_more": True})
    )
    with pytest.raises(errors.IncompleteListError):
        await _walk(client, ahead=True)


async def test_the_error_of_the_page_asked_for_early_is_the_walks_error(client, service):
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.params.get("page") == "c2":
            return httpx.Response(404, json={"error": {"type": "invalid_request_error"}})
        return httpx.Response(200, content=_page(1))

    service.get("/v1/things").mock(side_effect=answer)

    async def walk(ahead: bool, seen: list[str]) -> None:
        async for page in client.raw_pages("/v1/things", {"limit": 3}, ahead=ahead):
            seen.append(page["data"][0]["id"])

    outcomes = []
    for ahead in (False, True):
        seen: list[str] = []
        with pytest.raises(errors.APIError) as raised:
            await walk(ahead, seen)
        outcomes.append((seen, type(raised.value), raised.value.status))
    assert outcomes[1] == outcomes[0]
    assert outcomes[1][0] == ["thing_1_0"]  # the first page was yielded, then the walk failed

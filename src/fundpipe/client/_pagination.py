"""Lazy cursor pagination through `next_page_url`.

A `Paginator[T]` fetches nothing until iterated; it then fetches one page at a time and only asks
for the next page when the items of the current one are consumed, so an unbounded list is never
held in memory. `async for item in paginator` yields records; `async for page in
paginator.pages()` yields `Page[T]` objects (items plus the page's cursors).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx

from fundpipe.client._errors import IncompleteListError

T = TypeVar("T")

_CURSOR_PARAMS = frozenset({"page", "page_before", "limit"})

#: Fetches one page: (path or relative URL, query params or None) → the page's JSON object.
PageFetcher = Callable[[str, Mapping[str, Any] | None], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class PageAnswer:
    """A list page as received: its body, and how to decode it into the page's JSON object."""

    body: bytes
    decode: Callable[[], dict[str, Any]]

    def next_hint(self) -> str | None:
        """The `next_page_url` the body most likely holds, read from its tail without decoding
        it (the envelope's keys after `data`), or None. A guess: only `decode()` is the page."""
        found = _NEXT_URL.findall(self.body[-_HINT_TAIL:])
        if not found:
            return None
        try:
            value = json.loads(found[-1])
        except ValueError:
            return None
        return value if isinstance(value, str) else None


#: Fetches one page without decoding it: (path or relative URL, query params or None, called
#: once the request is on the wire or None) → its answer.
AnswerFetcher = Callable[
    [str, Mapping[str, Any] | None, Callable[[], None] | None], Awaitable[PageAnswer]
]
#: How long a walk waits for the early request to leave before it decodes the current page
#: (decoding holds the interpreter: a request not yet written waits until it is done).
_SEND_WAIT_S = 0.1

_NEXT_URL = re.compile(rb'"next_page_url"\s*:\s*("(?:[^"\\]|\\.)*"|null)')
_HINT_TAIL = 8192


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list: its records and the relative URLs of its neighbours."""

    data: list[T]
    next_page_url: str | None = None
    previous_page_url: str | None = None
    url: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


async def iter_raw_pages(
    fetch: PageFetcher, path: str, params: Mapping[str, Any] | None = None
) -> AsyncIterator[dict[str, Any]]:
    """Yield the raw JSON pages of the list at `path`, following `next_page_url` lazily.

    A page with `has_more: true` and no `next_page_url` (the older public form) raises
    `IncompleteListError` instead of being yielded: the list cannot be finished, and saying so
    beats a listing that silently lacks records.
    """
    url: str | None = path
    query: Mapping[str, Any] | None = params
    while url is not None:
        page = await fetch(url, query)
        next_url = _next_of(page, path)
        yield page
        url, query = _follow(url, next_url, params)


async def iter_raw_pages_ahead(
    fetch: AnswerFetcher,
    path: str,
    params: Mapping[str, Any] | None = None,
    *,
    wanted: Callable[[], bool] | None = None,
) -> AsyncIterator[dict[str, Any]]:
    """`iter_raw_pages`, asking for the next page while the current one is decoded and used.

    A list's next page can only be asked for with the cursor its current page holds, so a walk
    pays, per page, the service's time to render it and then its own time to decode and use
    it. Here the next page's URL is read from the tail of the current page's body
    (`PageAnswer.next_hint`) and asked for at once; when the decoded page names the same URL,
    that answer is the next page (the very request the plain walk would send, sent earlier).
    When it names another, the early answer is dropped and the walk goes on without guessing.
    At most one page is asked for ahead, and only when `wanted()` (called before each page is
    decoded; None: always) says the consumer will read past the current page: a consumer that
    may stop early says so and no request is spent on a page it would not read. The checks of
    `iter_raw_pages` hold for every page.
    """
    url: str = path
    guessing = True
    answer = await fetch(url, params, None)
    while True:
        early: asyncio.Future[PageAnswer] | None = None
        guess = answer.next_hint() if guessing and (wanted is None or wanted()) else None
        try:
            if guess is not None and guess != url:
                sent = asyncio.Event()
                early = asyncio.ensure_future(
                    fetch(guess, _carried_filters(guess, params), sent.set)
                )
                await _until_sent(early, sent)
            page = answer.decode()
            next_url = _next_of(page, path)
            yield page
            following, query = _follow(url, next_url, params)
            if following is None:
                return
            url = following
            if early is not None and guess == url:
                answer, early = await early, None
            else:
                guessing = guessing and early is None
                answer = await fetch(url, query, None)
        finally:
            if early is not None:  # a wrong guess, an error, or the consumer stopped
                early.cancel()
                with suppress(asyncio.CancelledError, Exception):
                    await early


async def _until_sent(task: asyncio.Future[Any], sent: asyncio.Event) -> None:
    """Wait until `sent` is set or `task` ends, at most `_SEND_WAIT_S`."""
    waiting = asyncio.ensure_future(sent.wait())
    try:
        await asyncio.wait(
            {task, waiting}, timeout=_SEND_WAIT_S, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        waiting.cancel()


def _next_of(page: Mapping[str, Any], path: str) -> str | None:
    """The page's `next_page_url`, checked (a string or null; present when `has_more`)."""
    next_url = page.get("next_page_url")
    if next_url is not None and not isinstance(next_url, str):
        msg = f"next_page_url must be a string or null, got {type(next_url).__name__}"
        raise TypeError(msg)
    if next_url is None and page.get("has_more") is True:
        raise IncompleteListError(path, _resource_of(path))
    return next_url


def _follow(
    url: str, next_url: str | None, params: Mapping[str, Any] | None
) -> tuple[str | None, dict[str, Any] | None]:
    """Where the walk goes after the page at `url`: its next URL and the filters it carries."""
    if next_url == url:
        msg = "next_page_url points at the page just read: the list would never end"
        raise RuntimeError(msg)
    return next_url, _carried_filters(next_url, params)


def _resource_of(path: str) -> str:
    """The plain name of what a list path lists: `/v1/vehicles/veh_1/financial_accounts` →
    `financial accounts`."""
    segment = path.partition("?")[0].rstrip("/").rsplit("/", 1)[-1]
    return segment.replace("_", " ") or "records"


def _carried_filters(
    next_url: str | None, params: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """The original filters a `next_page_url` does not repeat (cursor and limit excluded).

    A service that drops a filter such as `ids` from its cursor URLs would otherwise widen the
    list silently from the second page on.
    """
    if next_url is None or not params:
        return None
    present = set(httpx.URL(next_url).params.keys())
    carried = {k: v for k, v in params.items() if k not in present and k not in _CURSOR_PARAMS}
    return carried or None


class Paginator(Generic[T]):
    """An async iterator over the records of one list, page by page on demand."""

    def __init__(
        self,
        fetch: PageFetcher,
        path: str,
        params: Mapping[str, Any] | None,
        parse: Callable[[Any], T],
    ) -> None:
        """List `path` with `params`, turning every element of `data` into a T with `parse`."""
        self._fetch = fetch
        self._path = path
        self._params = dict(params or {})
        self._parse = parse

    async def pages(self) -> AsyncIterator[Page[T]]:
        """Yield the list's pages one at a time, fetching the next only when asked for it."""
        async for raw in iter_raw_pages(self._fetch, self._path, self._params):
            data = raw.get("data")
            if not isinstance(data, list):
                msg = "list answer without a `data` array"
                raise TypeError(msg)
            yield Page(
                data=[self._parse(item) for item in data],
                next_page_url=raw.get("next_page_url"),
                previous_page_url=raw.get("previous_page_url"),
                url=raw.get("url"),
                raw=raw,
            )

    async def _items(self) -> AsyncIterator[T]:
        async for page in self.pages():
            for item in page.data:
                yield item

    def __aiter__(self) -> AsyncIterator[T]:
        """Iterate over the records of every page."""
        return self._items()

    async def to_list(self, *, max_items: int | None = None) -> list[T]:
        """Collect the records into a list (only for lists known to be small), at most `max_items`."""
        out: list[T] = []
        async for item in self:
            out.append(item)
            if max_items is not None and len(out) >= max_items:
                break
        return out


def trace_sent(on_sent: Callable[[], None]) -> Callable[[str, dict[str, Any]], Awaitable[None]]:
    """An httpcore trace callback (the `trace` request extension) calling `on_sent` once a
    request's body is written: how an early page request says it has left."""

    async def trace(event: str, info: dict[str, Any]) -> None:
        if event.endswith(".send_request_body.complete"):
            on_sent()

    return trace

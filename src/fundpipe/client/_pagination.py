"""Lazy cursor pagination through `next_page_url`.

A `Paginator[T]` fetches nothing until iterated; it then fetches one page at a time and only asks
for the next page when the items of the current one are consumed, so an unbounded list is never
held in memory. `async for item in paginator` yields records; `async for page in
paginator.pages()` yields `Page[T]` objects (items plus the page's cursors).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx

from fundpipe.client._errors import IncompleteListError

T = TypeVar("T")

_CURSOR_PARAMS = frozenset({"page", "page_before", "limit"})

#: Fetches one page: (path or relative URL, query params or None) → the page's JSON object.
PageFetcher = Callable[[str, Mapping[str, Any] | None], Awaitable[dict[str, Any]]]


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
        next_url = page.get("next_page_url")
        if next_url is not None and not isinstance(next_url, str):
            msg = f"next_page_url must be a string or null, got {type(next_url).__name__}"
            raise TypeError(msg)
        if next_url is None and page.get("has_more") is True:
            raise IncompleteListError(path, _resource_of(path))
        yield page
        if next_url == url:
            msg = "next_page_url points at the page just read: the list would never end"
            raise RuntimeError(msg)
        url, query = next_url, _carried_filters(next_url, params)


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

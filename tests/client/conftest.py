"""Worlds for the client tests: settings, a respx-mocked service, a controllable clock."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import respx
from fundclient_helpers import BASE_URL, FakeClock, make_settings, token_response

from fundpipe.client import FundClient
from fundpipe.config import Settings


@pytest.fixture
def settings() -> Settings:
    return make_settings()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def service() -> Iterator[respx.Router]:
    """A respx router standing in for the service; the token endpoint answers TOKEN."""
    router = respx.Router(base_url=BASE_URL, assert_all_called=False)
    router.post("/oauth/token", name="token").mock(return_value=token_response())
    return router


@pytest.fixture
async def client(
    settings: Settings, service: respx.Router, clock: FakeClock
) -> AsyncIterator[FundClient]:
    async with FundClient(
        settings.client_config(), transport=httpx.MockTransport(service.async_handler), clock=clock
    ) as fund_client:
        yield fund_client

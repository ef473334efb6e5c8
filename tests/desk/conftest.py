"""The desk's worlds: one data folder per module (built in seconds), and apps over it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import time_machine
from desk_world import WORLD_START, DeskWorld, build_world, desk_over
from fastapi.testclient import TestClient

from fundpipe.desk import create_app


@pytest.fixture(scope="session")
def desk_world(tmp_path_factory: pytest.TempPathFactory) -> DeskWorld:
    """The session's data folder (read-only tests share it; `own_world` for one to change),
    made once, on the clock every test module starts at (tests/conftest.py: WORLD_START)."""
    with time_machine.travel(WORLD_START, tick=False):
        # the session's cache (tests/conftest.py: session_cache): its kept empty warehouse
        return build_world(
            tmp_path_factory.mktemp("desk"), tmp_path_factory.getbasetemp() / "cache"
        )


@pytest.fixture
def own_world(desk_world: DeskWorld, tmp_path: Path) -> DeskWorld:
    """A copy of the module's data folder that a test may change."""
    return desk_world.copy(tmp_path / "data")


@pytest.fixture
def client_of() -> Iterator[Callable[..., TestClient]]:
    """Make TestClients over a world's desk (closed after the test)."""
    made: list[TestClient] = []

    def make(world: DeskWorld, **desk: object) -> TestClient:
        client = TestClient(create_app(desk_over(world, **desk)), base_url="http://127.0.0.1")
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()

"""Outages are ridden out until FUNDPIPE_RETRY_DEADLINE_S, on a virtual clock (no sleeping)."""

from __future__ import annotations

import httpx
import pytest
from fundclient_helpers import error_body, make_settings

from fundpipe.client import FundClient, errors
from fundpipe.client._retry import Timer
from fundpipe.errors import ExitCode, as_fundpipe_error


class VirtualTimer(Timer):
    """Time passes only when the client waits."""

    def __init__(self) -> None:
        super().__init__()
        self.t = 0.0
        self.waits: list[float] = []

    def now(self) -> float:
        return self.t

    def waited(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.t += seconds


def unavailable(timer: VirtualTimer, until_s: float, retry_after: str | None = None):
    """503 (without Retry-After unless given) while the virtual clock is before `until_s`."""

    def answer(request: httpx.Request) -> httpx.Response:
        if timer.t < until_s:
            headers = {"Retry-After": retry_after} if retry_after else {}
            return httpx.Response(
                503, json=error_body(503, "api_error", "internal_error"), headers=headers
            )
        return httpx.Response(200, json={"id": "veh_1"})

    return answer


async def test_thirty_seconds_of_503_without_retry_after_are_ridden_out(service):
    timer = VirtualTimer()
    route = service.get("/v1/vehicles/veh_1").mock(side_effect=unavailable(timer, 30.0))
    config = make_settings(retry_deadline_s=120.0, max_attempts=None).client_config()
    async with FundClient(
        config, transport=httpx.MockTransport(service.async_handler), timer=timer
    ) as client:
        vehicle = await client.get_vehicle("veh_1")
        notes = client.notes
    assert vehicle.id == "veh_1"
    assert route.call_count > 6  # more than the old attempt count
    assert timer.t >= 30.0
    assert max(timer.waits) <= 30.0  # the backoff's cap
    assert any("unavailable for" in n and "waited it out" in n for n in notes)


@pytest.mark.parametrize("retry_after", [None, "5"])
async def test_an_outage_longer_than_the_deadline_fails_with_a_plain_sentence(service, retry_after):
    timer = VirtualTimer()
    service.get("/v1/vehicles/veh_1").mock(
        side_effect=unavailable(timer, 10_000.0, retry_after=retry_after)
    )
    config = make_settings(retry_deadline_s=120.0, max_attempts=None).client_config()
    async with FundClient(
        config, transport=httpx.MockTransport(service.async_handler), timer=timer
    ) as client:
        with pytest.raises(errors.ServiceOutageError) as info:
            await client.get_vehicle("veh_1")
    # with or without Retry-After: retried until the deadline, not before
    assert timer.t >= 120.0
    assert info.value.seconds >= 120.0
    message = str(info.value)
    assert "unavailable for 2 min" in message
    assert "FUNDPIPE_RETRY_DEADLINE_S" in message
    assert "nothing was lost" in message
    failure = as_fundpipe_error(info.value)
    assert failure.exit_code == ExitCode.SERVICE
    assert "Traceback" not in str(failure)


async def test_without_an_injected_timer_the_test_mode_skips_waits_but_counts_them(service):
    route = service.get("/v1/vehicles/veh_1").mock(
        return_value=httpx.Response(503, json=error_body(503, "api_error", "internal_error"))
    )
    config = make_settings(retry_deadline_s=60.0, max_attempts=None).client_config()
    async with FundClient(config, transport=httpx.MockTransport(service.async_handler)) as client:
        with pytest.raises(errors.ServiceOutageError):
            await client.get_vehicle("veh_1")
    assert route.call_count > 6


def test_client_config_is_built_from_the_settings_and_frozen():
    import dataclasses

    from fundpipe.client import ClientConfig
    from fundpipe.client._config import DEFAULT_PATHS as CLIENT_PATHS
    from fundpipe.config import DEFAULT_PATHS

    settings = make_settings(retry_deadline_s=300.0, org_id="org_x", max_attempts=None)
    config = settings.client_config()
    assert isinstance(config, ClientConfig)
    assert (config.http.retry_deadline_s, config.org_id, config.http.max_attempts) == (
        300.0,
        "org_x",
        None,
    )
    assert config.http.backoff_max_s == 30.0  # the backoff's cap by default
    assert dict(config.paths) == dict(settings.service.paths)
    assert dict(CLIENT_PATHS) == DEFAULT_PATHS
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.org_id = "org_y"  # type: ignore[misc]
    with pytest.raises(TypeError, match="client_config"):
        FundClient(settings)  # type: ignore[arg-type]

"""The embedded sandbox takes the strict and public-forms modes from the settings."""

from __future__ import annotations

from pathlib import Path

import httpx

from fundpipe.app.embedded import EMBEDDED_SERVICE_NAME, service
from fundpipe.config import Settings


def _vehicles_status(settings: Settings) -> int:
    with service(settings) as live:
        assert live.service.base_url is not None
        assert live.service.service_identity == EMBEDDED_SERVICE_NAME  # the port changes every run
        assert live.service.livemode is False
        token = httpx.post(
            f"{live.service.base_url}/oauth/token",
            data={"grant_type": "client_credentials"},
            auth=("demo-client", "demo-secret"),
        ).json()["access_token"]
        return httpx.get(
            f"{live.service.base_url}/v1/vehicles",
            # the embedded sandbox has two demo organizations: a request names one
            headers={"Authorization": f"Bearer {token}", "X-Organization-Id": "org_demo"},
        ).status_code


def test_fundpipe_sandbox_strict_serves_only_the_documented_operations(tmp_path: Path) -> None:
    strict = Settings(
        _env_file=None, local={"data_dir": tmp_path / "strict"}, sandbox={"sandbox_strict": True}
    )  # type: ignore[call-arg]
    assert _vehicles_status(strict) == 404
    default = Settings(_env_file=None, local={"data_dir": tmp_path / "default"})  # type: ignore[call-arg]
    assert _vehicles_status(default) == 200

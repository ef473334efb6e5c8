"""A CLI command configured only with `FUNDPIPE_CLIENT_SECRET_BLOCK` authenticates: the secret
comes from a real Prefect Secret block on a (temporary) Prefect server, with no
`FUNDPIPE_CLIENT_SECRET` and no `FUNDPIPE_ORGS`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fundpipe.app.cli import app
from fundpipe.sandbox import SandboxConfig, SandboxServer

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def prefect_harness() -> Iterator[None]:
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=240):
        yield


def test_a_cli_command_configured_only_with_a_secret_block_authenticates(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect.blocks.system import Secret

    Secret(value="demo-secret").save("fundpipe-client-secret", overwrite=True)
    for name in ("FUNDPIPE_CLIENT_SECRET", "FUNDPIPE_ORGS", "FUNDPIPE_ORGS_FILE"):
        monkeypatch.delenv(name, raising=False)
    with SandboxServer(SandboxConfig(seed="demo")) as server:
        env = {
            "FUNDPIPE_BASE_URL": server.base_url,
            "FUNDPIPE_CLIENT_ID": "demo-client",
            "FUNDPIPE_CLIENT_SECRET_BLOCK": "fundpipe-client-secret",
            "FUNDPIPE_ORG_ID": "org_demo",
            "FUNDPIPE_DATA_DIR": str(tmp_path),
        }
        result = CliRunner().invoke(app, ["sync", "--json"], env=env)
        assert result.exit_code == 0, result.output
        assert '"counts"' in result.output
        assert (tmp_path / "orgs" / "org_demo" / "warehouse.duckdb").exists()

        wrong = {**env, "FUNDPIPE_CLIENT_SECRET_BLOCK": "no-such-block"}
        missing = CliRunner().invoke(app, ["sync"], env=wrong)
        assert missing.exit_code == 2, missing.output
        assert "no Prefect Secret block 'no-such-block'" in " ".join(missing.output.split())

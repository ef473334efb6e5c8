"""Settings carry only what something reads."""

from __future__ import annotations

import pytest

from fundpipe.config import Settings


def test_a_setting_nothing_reads_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    """`log_level` was read by nothing (logging is the entry points' choice); an old
    FUNDPIPE_LOG_LEVEL in an environment is ignored, not an error."""
    assert "log_level" not in Settings.model_fields
    monkeypatch.setenv("FUNDPIPE_LOG_LEVEL", "DEBUG")
    assert not hasattr(Settings(_env_file=None), "log_level")  # type: ignore[call-arg]


def test_the_embedded_sandbox_fills_only_credentials_nobody_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pointed at the embedded sandbox, settings get the demo client's credentials where none
    are set; a secret a Prefect Secret block names counts as set (the entry point's loader,
    `fundpipe.orgs.org_settings`, fills it after the sandbox started, as before it)."""
    for name in ("CLIENT_ID", "CLIENT_SECRET", "CLIENT_SECRET_BLOCK", "ORG_ID"):
        monkeypatch.delenv(f"FUNDPIPE_{name}", raising=False)
    bare = Settings(_env_file=None).with_service("http://127.0.0.1:1")  # type: ignore[call-arg]
    assert (bare.client_id, bare.org_id) == ("demo-client", "org_demo")
    assert bare.client_secret is not None
    assert bare.client_secret.get_secret_value() == "demo-secret"
    named = Settings(  # type: ignore[call-arg]
        _env_file=None, client_secret_block="fundpipe-client-secret"
    ).with_service("http://127.0.0.1:1")
    assert named.client_secret is None
    assert named.client_secret_block == "fundpipe-client-secret"
    explicit = Settings(_env_file=None, client_secret="mine")  # type: ignore[call-arg]
    assert explicit.with_service("http://127.0.0.1:1").client_secret == explicit.client_secret

"""Settings carry only what something reads, in groups, each field read from the environment
variable it always had."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr, ValidationError

from fundpipe.config import GROUPS, Settings, grouped

#: A value each field takes from its environment variable, where a field's type alone does not
#: give one: (the variable's text, the value read).
SAMPLES: dict[str, tuple[str, Any]] = {
    "submit_batch_size": ("7", 7),
    "date_order": ("DMY", "dmy"),
    "reporting_timezone": ("Europe/Paris", "Europe/Paris"),
    "nightly_timezone": ("Europe/Paris", "Europe/Paris"),
    "nightly_cron": ("0 2 * * *", "0 2 * * *"),
    "complete_by": ("07:30", "07:30"),
    "fan_out": ("deployments", "deployments"),
    "paths": ('{"vehicles": "/v2/funds"}', "/v2/funds"),
    "vehicles": ("veh_a, veh_b", ["veh_a", "veh_b"]),
    "scopes": ("a:read,b:write", "a:read b:write"),
    "materiality": ("250.50", 25050),
    "client_secret": ("shh", "shh"),
}


def _sample(name: str, field: Any) -> tuple[str, Any]:
    """The text to set `FUNDPIPE_<NAME>` to and the value then read (never the default)."""
    if name in SAMPLES:
        return SAMPLES[name]
    kinds = str(field.annotation)
    default = field.default
    if "bool" in kinds:
        return ("false", False) if default else ("true", True)
    if "int" in kinds:
        return str((default or 0) + 3), (default or 0) + 3
    if "float" in kinds:
        return str((default or 0) + 2.5), (default or 0) + 2.5
    if "Path" in kinds:
        return f"/srv/{name}", Path(f"/srv/{name}")
    assert "str" in kinds, (name, kinds)
    return f"x-{name}", f"x-{name}"


FIELDS = [
    (group, name, field)
    for group, model in GROUPS.items()
    for name, field in model.model_fields.items()
]


def test_every_field_is_read_from_its_own_variable_into_its_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The grouping changed no variable's name: `FUNDPIPE_<FIELD>` sets the field in its group
    (`FUNDPIPE_RETRY_DEADLINE_S` -> `settings.http.retry_deadline_s`), every field at once."""
    assert len(FIELDS) >= 46
    for _, name, field in FIELDS:
        monkeypatch.setenv(f"FUNDPIPE_{name.upper()}", _sample(name, field)[0])
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    for group, name, field in FIELDS:
        read = getattr(getattr(settings, group), name)
        read = read.get_secret_value() if isinstance(read, SecretStr) else read
        read = read["vehicles"] if name == "paths" else read
        assert read == _sample(name, field)[1], f"FUNDPIPE_{name.upper()}"
        assert read != field.get_default(call_default_factory=True), name


def test_the_flat_names_are_gone(tmp_path: Path) -> None:
    """No field is an attribute of the settings themselves, nor taken as a flat keyword: a read
    says its group (so the flat namespace does not grow back)."""
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    for group, name, _ in FIELDS:
        assert not hasattr(settings, name), name
        assert hasattr(getattr(settings, group), name), name
    with pytest.raises(ValidationError):
        Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]  # flat on purpose
    built = Settings(**grouped(_env_file=None, data_dir=tmp_path, retry_deadline_s=1.5))
    assert (built.local.data_dir, built.http.retry_deadline_s) == (tmp_path, 1.5)
    with pytest.raises(TypeError, match="no setting 'retry_deadline'"):
        grouped(retry_deadline=1)
    moved = built.updated(local={"data_dir": tmp_path / "b"}, http={"max_attempts": 2})
    assert (moved.local.data_dir, moved.http.max_attempts) == (tmp_path / "b", 2)
    assert built.local.data_dir == tmp_path  # a copy
    with pytest.raises(TypeError, match="no setting"):
        built.updated(local={"retry_deadline_s": 1})


def test_an_argument_wins_over_the_environment_and_the_environment_over_env_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`.env` is still read, below the environment; an argument sets one field of a group and
    leaves the group's others to the environment."""
    env_file = tmp_path / ".env"
    env_file.write_text(
        "FUNDPIPE_MAX_ATTEMPTS=5\nFUNDPIPE_RETRY_DEADLINE_S=9\nFUNDPIPE_ORG_ID=org_f\n"
    )
    monkeypatch.setenv("FUNDPIPE_RETRY_DEADLINE_S", "7")
    monkeypatch.delenv("FUNDPIPE_ORG_ID", raising=False)
    monkeypatch.delenv("FUNDPIPE_MAX_ATTEMPTS", raising=False)
    settings = Settings(_env_file=env_file, http={"max_attempts": 2})  # type: ignore[call-arg]
    assert (settings.http.max_attempts, settings.http.retry_deadline_s) == (2, 7.0)
    assert settings.service.org_id == "org_f"


def test_the_client_gets_the_http_group_as_it_is() -> None:
    """`ClientConfig` carries the whole http group (and the service's fields): a policy field
    added to the group reaches the client, or this fails."""
    settings = Settings(_env_file=None, http={"retry_deadline_s": 3.0, "max_concurrency": 2})  # type: ignore[call-arg]
    config = settings.client_config()
    assert set(type(config.http).model_fields) >= set(GROUPS["http"].model_fields)
    for name in GROUPS["http"].model_fields:
        assert getattr(config.http, name) == getattr(settings.http, name), name


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
    assert (bare.service.client_id, bare.service.org_id) == ("demo-client", "org_demo")
    assert bare.service.client_secret is not None
    assert bare.service.client_secret.get_secret_value() == "demo-secret"
    named = Settings(
        _env_file=None, service={"client_secret_block": "fundpipe-client-secret"}
    ).with_service("http://127.0.0.1:1")
    assert named.service.client_secret is None
    assert named.service.client_secret_block == "fundpipe-client-secret"
    explicit = Settings(_env_file=None, service={"client_secret": "mine"})  # type: ignore[call-arg]
    assert (
        explicit.with_service("http://127.0.0.1:1").service.client_secret
        == explicit.service.client_secret
    )


def test_the_cache_folder_follows_xdg_and_is_none_without_a_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("FUNDPIPE_CACHE_DIR")  # the suite's own (tests/conftest.py)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert Settings().local.cache_dir == tmp_path / "xdg" / "fundpipe"
    monkeypatch.setenv("FUNDPIPE_CACHE_DIR", str(tmp_path / "mine"))
    assert Settings().local.cache_dir == tmp_path / "mine"
    monkeypatch.delenv("FUNDPIPE_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv("HOME", raising=False)

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert Settings().local.cache_dir is None

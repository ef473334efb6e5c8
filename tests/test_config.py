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

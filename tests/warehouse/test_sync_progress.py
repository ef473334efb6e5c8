"""What the progress bars of `fundpipe sync` report is what was synced."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import httpx
from rich.console import Console

from fundpipe.config import Settings
from fundpipe.progress import RichProgress
from fundpipe.sandbox import SandboxConfig, create_app
from fundpipe.sync import sync


class Recorder:
    """A progress sink that remembers every step and every advance."""

    def __init__(self) -> None:
        self.started: dict[str, str] = {}
        self.done: Counter[str] = Counter()

    def start(self, key: str, description: str, total: int | None = None) -> None:
        self.started[key] = description

    def advance(self, key: str, amount: int = 1) -> None:
        self.done[key] += amount


def _demo(tmp_path: Path) -> tuple[httpx.ASGITransport, Settings]:
    transport = httpx.ASGITransport(
        app=create_app(SandboxConfig(seed="demo", rate_limit_requests=100_000))
    )
    settings = Settings(
        data_dir=tmp_path / "data",
        rate_limit_per_s=10_000,
        _env_file=None,  # type: ignore[call-arg]
    ).with_service("http://sandbox.test")
    return transport, settings


def test_progress_counts_every_synced_row_per_list(tmp_path: Path) -> None:
    transport, settings = _demo(tmp_path)
    recorder = Recorder()
    result = sync(settings, transport=transport, progress=recorder)
    assert set(recorder.started) == set(result.counts)
    assert dict(recorder.done) == {k: v for k, v in result.counts.items() if v}
    assert result.counts["financial_accounts"] == 6  # the demo organization's accounts


def test_rich_progress_draws_a_bar_per_list(tmp_path: Path) -> None:
    transport, settings = _demo(tmp_path)
    console = Console(record=True, width=120, force_terminal=False)
    with RichProgress(console) as progress:
        sync(settings, transport=transport, progress=progress)
    text = console.export_text()
    assert "sync financial accounts" in text
    assert "6/" in text

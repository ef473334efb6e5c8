"""`run --samples` with a custom data directory still copies the samples (issue 13)."""

from __future__ import annotations

from pathlib import Path

from fundpipe.app.samples import BUNDLED_SAMPLES, copy_samples
from fundpipe.config import Settings


def test_a_custom_data_directory_gets_the_bundled_samples(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, local={"data_dir": tmp_path / "elsewhere"})  # type: ignore[call-arg]
    copied = copy_samples(settings)
    assert copied, "files seen 0: nothing was copied"
    assert {p.name for p in copied} == {
        p.name for p in BUNDLED_SAMPLES.iterdir() if p.is_file() and p.suffix != ".md"
    }
    assert all(p.parent == tmp_path / "elsewhere" / "inbox" for p in copied)


def test_the_data_directory_s_own_samples_come_first(tmp_path: Path) -> None:
    own = tmp_path / "data" / "samples"
    own.mkdir(parents=True)
    (own / "mine.csv").write_text("x\n", encoding="utf-8")
    settings = Settings(_env_file=None, local={"data_dir": tmp_path / "data"})  # type: ignore[call-arg]
    assert [p.name for p in copy_samples(settings)] == ["mine.csv"]

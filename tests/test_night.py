"""One organization's night is a library call (`fundpipe.night.night`) returning typed data."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import pytest

from fundpipe.errors import ExitCode
from fundpipe.night import STEPS, NightResult, night
from worlds.submit import World, write_sheet

_R = TypeVar("_R")


def test_a_night_ingests_syncs_reconciles_and_reports(world: World) -> None:
    truth = write_sheet(
        world.inbox / "q4.csv", [("A-1", "veh_demo1", [100_00, 250_01]), ("A-2", "veh_demo2", [5])]
    )
    settings = world.settings.model_copy(update={"inbox_settle_s": 0})
    result = night(settings, transport=world.transport)
    assert isinstance(result, NightResult)
    assert [(f.source_file, f.state) for f in result.files] == [("q4.csv", "processed")]
    assert (result.files_seen, result.files_processed, result.files_rejected) == (1, 1, 0)
    assert result.distributions_created == 2
    assert result.cents_created == sum(sum(v) for v in truth.values()) == 35006
    assert result.exit_code == ExitCode.OK
    assert result.workbook.is_file()
    assert result.workbook.parent == result.reports_dir
    assert result.parquet["exceptions"].is_file()
    assert result.sync.counts["distributions"] >= 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.exit_code = ExitCode.SERVICE  # type: ignore[misc]


def test_a_rejected_file_makes_the_night_need_a_person(world: World) -> None:
    (world.inbox / "bad.csv").write_text("not,a,distribution,sheet\n1,2,3,4\n", encoding="utf-8")
    settings = world.settings.model_copy(update={"inbox_settle_s": 0})
    result = night(settings, transport=world.transport)
    assert [f.state for f in result.files] == ["rejected"]
    assert (result.files_processed, result.files_rejected) == (0, 1)
    assert result.distributions_created == 0
    assert result.exit_code == ExitCode.NEEDS_PERSON == 1
    assert result.workbook.is_file()  # the reports are written all the same


def test_a_night_runs_its_steps_through_the_step_runner_it_is_given(world: World) -> None:
    """The entry point's step runner sees every step, in order (the `org-night` flow hands it
    one that makes each a Prefect task: tests/e2e/test_nightly_flow.py reads them back)."""
    write_sheet(world.inbox / "q4.csv", [("A-1", "veh_demo1", [100_00])])
    settings = world.settings.model_copy(update={"inbox_settle_s": 0})
    seen: list[str] = []

    def recording(name: str, work: Callable[[], _R], /) -> _R:
        seen.append(name)
        return work()

    held: list[str] = []

    @contextmanager
    def slot() -> Iterator[None]:
        held.append(f"take before {len(seen)} step(s)")
        yield
        held.append(f"give back after {len(seen)} step(s)")

    result = night(settings, transport=world.transport, step=recording, around_service=slot)
    assert seen == list(STEPS) == ["ingest", "sync", "reconcile"]
    # ingest and sync talk to the service: the slot is held around them, not around reconcile
    assert held == ["take before 0 step(s)", "give back after 2 step(s)"]
    assert result.files_processed == 1

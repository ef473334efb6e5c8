"""The Prefect deployments: what `fundpipe serve` serves and what `prefect.yaml` declares agree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from fundpipe.app.prefect import flows as night_flows
from fundpipe.config import Settings

ROOT = Path(__file__).resolve().parents[2]


def _declared() -> dict[str, dict[str, Any]]:
    document = yaml.safe_load((ROOT / "flows" / "prefect.yaml").read_text())
    return {d["name"]: d for d in document["deployments"]}


def test_served_deployments_run_nightly_on_a_zoned_cron_and_the_inbox_every_few_minutes() -> None:
    served = {d.name: d for d in night_flows.deployments()}
    assert set(served) == {"nightly", "inbox", "org-night", "night-check"}
    nightly = served["nightly"].schedules[0].schedule
    assert nightly.cron == "30 1 * * *"
    assert nightly.timezone == "America/New_York"
    inbox = served["inbox"].schedules[0].schedule
    assert 60 <= inbox.interval.total_seconds() <= 900
    for deployment in served.values():
        # no secret travels as a parameter
        assert "secret" not in str(deployment.parameters).lower()
    for name in ("nightly", "inbox"):
        assert served[name].concurrency_limit == 1
    # the per-organization runs are started by the nightly run, and run side by side
    assert served["org-night"].schedules == []
    assert served["org-night"].concurrency_limit is None
    # an overlapping nightly run is not started; an inbox run waits for the one before it
    assert served["nightly"].concurrency_options.collision_strategy.value == "CANCEL_NEW"
    assert served["inbox"].concurrency_options.collision_strategy.value == "ENQUEUE"
    # the late-night check runs at the deadline (FUNDPIPE_COMPLETE_BY, default 06:00), in the
    # nightly's zone, and no earlier check can hold it back
    check = served["night-check"].schedules[0].schedule
    assert (check.cron, check.timezone) == ("0 6 * * *", "America/New_York")
    assert served["night-check"].concurrency_limit is None


def test_the_night_check_runs_at_the_complete_by_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FUNDPIPE_COMPLETE_BY", "07:45")
    monkeypatch.setenv("FUNDPIPE_NIGHTLY_TIMEZONE", "Europe/London")
    served = {d.name: d for d in night_flows.deployments()}
    check = served["night-check"].schedules[0].schedule
    assert (check.cron, check.timezone) == ("45 7 * * *", "Europe/London")


@pytest.mark.parametrize("bad", ["6:00", "24:00", "06:60", "06-00", ""])
def test_a_complete_by_that_is_not_hh_mm_is_refused(bad: str) -> None:
    with pytest.raises(ValidationError, match="complete_by"):
        Settings(orchestration={"complete_by": bad})


def test_the_inbox_deployment_is_triggered_by_the_watchers_event() -> None:
    from fundpipe.app.prefect.watch import INBOX_EVENT, INBOX_RESOURCE

    served = {d.name: d for d in night_flows.deployments()}
    assert served["nightly"].triggers == []
    (trigger,) = served["inbox"].triggers
    assert trigger.expect == {INBOX_EVENT}
    assert trigger.match.model_dump() == {"prefect.resource.id": INBOX_RESOURCE}
    declared = _declared()["inbox"]["triggers"]
    assert [(t["expect"], t["match"]) for t in declared] == [
        ([INBOX_EVENT], {"prefect.resource.id": INBOX_RESOURCE})
    ]
    assert declared[0]["posture"] == "Reactive"


def test_prefect_yaml_declares_the_same_deployments_as_serve() -> None:
    declared = _declared()
    served = {d.name: d for d in night_flows.deployments()}
    assert set(declared) == set(served)
    nightly = declared["nightly"]["schedules"][0]
    assert (nightly["cron"], nightly["timezone"]) == (
        served["nightly"].schedules[0].schedule.cron,
        served["nightly"].schedules[0].schedule.timezone,
    )
    inbox = declared["inbox"]["schedules"][0]
    assert inbox["interval"] == served["inbox"].schedules[0].schedule.interval.total_seconds()
    assert "schedules" not in declared["org-night"]
    assert "concurrency_limit" not in declared["org-night"]
    check = declared["night-check"]["schedules"][0]
    assert (check["cron"], check["timezone"]) == (
        served["night-check"].schedules[0].schedule.cron,
        served["night-check"].schedules[0].schedule.timezone,
    )
    assert "concurrency_limit" not in declared["night-check"]
    for name, deployment in declared.items():
        if name not in {"org-night", "night-check"}:
            assert deployment["concurrency_limit"]["limit"] == 1
            assert (
                deployment["concurrency_limit"]["collision_strategy"]
                == served[name].concurrency_options.collision_strategy.value
            )
        # a module path into the installed package: a worker needs no checkout
        module, _, flow_name = deployment["entrypoint"].rpartition(".")
        assert module == night_flows.__name__, deployment["entrypoint"]
        assert hasattr(night_flows, flow_name), f"{name}: no flow {flow_name}"
        assert "secret" not in str(deployment.get("parameters", {})).lower()

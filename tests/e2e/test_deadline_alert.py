"""The late-night alert fires at the deadline, per organization, through the server's real
scheduler and automation engine.

A real `prefect server start` (its scheduler looping every 5 s), `fundpipe alerts install`, the
`night-check` deployment of flows/prefect.yaml scheduled at a deadline a minute or two ahead (a
cron, as `--complete-by` says), a process worker, and a webhook receiver on loopback. Two
organizations are configured; before the deadline org_demo's night completes — its
`fundpipe.night.completed` event is posted to the server's events API exactly as a night emits
it (tests/e2e/test_on_call_alerts.py proves a night emits it) — and org_demob's does not.
Asserted: the notification naming org_demob arrives within 2 minutes of the deadline, and none
names org_demo.
"""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from prefect_processes import (
    FUNDPIPE,
    PREFECT,
    PrefectApi,
    base_env,
    free_port,
    healthy,
    processes,
    run_cli,
    unexpected_tracebacks,
    wait_for,
    webhook_receiver,
)

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.timeout(600)]

ZONE = "America/New_York"
#: The requirement: the missed night's notification within this long after the deadline.
WITHIN_S = 120
#: How long after the check ran a (wrong) notification for the completed organization is awaited.
QUIET_S = 8


def _completed_event(org: str) -> dict[str, Any]:
    """The `fundpipe.night.completed` event a night emits (fundpipe.app.prefect.oncall.night_event)."""
    return {
        "id": str(uuid.uuid4()),
        "occurred": datetime.now(UTC).isoformat(),
        "event": "fundpipe.night.completed",
        "resource": {
            "prefect.resource.id": f"fundpipe.night.{org}",
            "prefect.resource.name": f"fundpipe night of {org}",
        },
        "payload": {"organization": org, "counts": {"files_seen": 0}},
    }


def test_the_missed_night_alert_fires_at_the_deadline_for_that_organization_only(
    tmp_path: Path,
) -> None:
    port = free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    env = base_env(tmp_path / "prefect-home", api_url, tmp_path / "data")
    env.update(
        {
            "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "5",
            "FUNDPIPE_ORGS": "org_demo,org_demob",
            "FUNDPIPE_NIGHTLY_TIMEZONE": ZONE,
        }
    )
    with webhook_receiver() as (hook, bodies), processes(tmp_path / "logs") as procs:
        procs.start(
            "server",
            [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            {**env, "PREFECT_UI_ENABLED": "false"},
        )
        wait_for("the Prefect server", lambda: healthy(api_url), 180)
        api = PrefectApi(api_url)
        run_cli([PREFECT, "work-pool", "create", "fundpipe", "--type", "process"], env)
        procs.start(
            "worker",
            [PREFECT, "worker", "start", "--pool", "fundpipe"],
            {**env, "PREFECT_WORKER_QUERY_SECONDS": "2"},
        )
        run_cli(
            [
                PREFECT,
                "--no-prompt",
                "deploy",
                "--name",
                "night-check",
                "--prefect-file",
                "flows/prefect.yaml",
            ],
            env,
        )
        # the deadline: the first whole minute at least 60 s ahead, in the nightly's timezone
        now = datetime.now(ZoneInfo(ZONE))
        deadline = (now + timedelta(seconds=60 + 59)).replace(second=0, microsecond=0)
        complete_by = deadline.strftime("%H:%M")
        installed = run_cli(
            [FUNDPIPE, "alerts", "install", "--webhook", hook, "--complete-by", complete_by], env
        )
        assert "no night completed" in installed
        run_cli(
            [
                PREFECT,
                "deployment",
                "schedule",
                "create",
                "night-check/night-check",
                "--cron",
                f"{deadline.minute} {deadline.hour} * * *",
                "--timezone",
                ZONE,
            ],
            env,
        )
        # org_demo's night completes before the deadline; org_demob's never does
        posted = api.http.post("/events", json=[_completed_event("org_demo")])
        assert posted.status_code == 204, posted.text
        assert datetime.now(ZoneInfo(ZONE)) < deadline, "setup took past the deadline"

        def missed_post() -> list[str]:
            return [b for b in bodies if "no night completed for org_demob" in b]

        wait_s = (deadline - datetime.now(ZoneInfo(ZONE))).total_seconds() + WITHIN_S
        (alert,) = wait_for("the missed-night notification", missed_post, wait_s, step=0.5)
        arrived = datetime.now(ZoneInfo(ZONE))
        late_by = (arrived - deadline).total_seconds()
        assert 0 <= late_by <= WITHIN_S, f"arrived {late_by:.0f} s after the deadline"
        text = json.loads(alert)
        assert f"by {complete_by}" in text["subject"]
        assert "org_demob" in text["text"]
        assert ZONE in text["text"]

        # the check's run says which organization completed and which did not
        def check_done() -> dict[str, Any] | None:
            runs = api.flow_runs("night-check/night-check")
            done = [r for r in runs if (r.get("state") or {}).get("type") == "COMPLETED"]
            return done[0] if done else None

        check = wait_for("the night-check run", check_done, 60)
        assert "no night completed for org_demob" in check["state"]["message"]
        assert "completed: org_demo" in check["state"]["message"]
        time.sleep(QUIET_S)
        assert [b for b in bodies if "for org_demo by" in b] == []
        assert len(missed_post()) == 1, bodies
        print(f"missed-night alert {late_by:.0f} s after the {complete_by} deadline")
        for name in ("server", "worker"):
            assert unexpected_tracebacks(procs.log(name)) == [], name

"""The missed-night alert comes from the Prefect server alone: no worker, no `fundpipe serve`.

A real `prefect server start`, the `nightly` deployment of flows/prefect.yaml, one of its runs
scheduled a minute or so ahead, `fundpipe alerts install --complete-by` a minute after that, a
webhook receiver on loopback — and nothing that could run a flow. The nightly's run comes due and
nothing takes it: the server's late-runs service marks it Late, which opens each organization's
window. Before the deadline Demo Fund I's night completes — its `fundpipe.night.completed` event is
posted to the server's events API exactly as a night emits it (oncall.night_event with its related
resource; tests/e2e/test_on_call_alerts.py proves a night emits it) — and Demo Fund II's does not.
Asserted: one notification naming Demo Fund II by its name arrives within 2 minutes of the
deadline, saying the nightly run is Late and linking to it; none names Demo Fund I.

The run is scheduled through the API (`prefect deployment run --start-in`), not by the
deployment's cron: the server's scheduler inserts its runs without their Scheduled event, so the
server orders such a run's Late event after the one it follows for up to 15 minutes before
automations see it. The window still counts from the Late event's time (and the nights' events
meanwhile are held for it), so with a real window (01:30 → 06:00) the alert is on time; a one-minute
test window cannot wait 15 minutes.
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

from fundpipe.app.prefect.oncall import related_of

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.timeout(600)]

ZONE = "America/New_York"
ORGS = [{"id": "org_demo", "name": "Demo Fund I"}, {"id": "org_demob", "name": "Demo Fund II"}]
#: The requirement: the missed night's notification within this long after the deadline.
WITHIN_S = 120
#: How long after the alert a (wrong) notification for the completed organization is awaited.
QUIET_S = 8


def _completed_event(org: str) -> dict[str, Any]:
    """The `fundpipe.night.completed` event a night emits (oncall.night_event, tell._emit)."""
    return {
        "id": str(uuid.uuid4()),
        "occurred": datetime.now(UTC).isoformat(),
        "event": "fundpipe.night.completed",
        "resource": {
            "prefect.resource.id": f"fundpipe.night.{org}",
            "prefect.resource.name": f"fundpipe night of {org}",
        },
        "related": related_of("fundpipe.night.completed"),
        "payload": {"organization": org, "counts": {"files_seen": 0}},
    }


def test_the_server_alone_says_which_organization_missed_its_night(tmp_path: Path) -> None:
    port = free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    env = base_env(tmp_path / "prefect-home", api_url, tmp_path / "data")
    env.update(
        {
            "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "5",
            "FUNDPIPE_ORGS": json.dumps(ORGS),
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
        deploy = [PREFECT, "--no-prompt", "deploy", "--name", "nightly"]
        run_cli([*deploy, "--prefect-file", "flows/prefect.yaml"], env)
        # the nightly runs at the first whole minute at least 50 s ahead; the deadline is a
        # minute later
        run_cli([PREFECT, "deployment", "schedule", "clear", "nightly/nightly", "-y"], env)
        now = datetime.now(ZoneInfo(ZONE))
        starts = (now + timedelta(seconds=50 + 59)).replace(second=0, microsecond=0)
        deadline = starts + timedelta(minutes=1)
        cron = f"{starts.minute} {starts.hour} * * *"
        complete_by = deadline.strftime("%H:%M")
        installed = run_cli(
            [FUNDPIPE, "alerts", "install", "--webhook", hook, "--complete-by", complete_by],
            {**env, "FUNDPIPE_NIGHTLY_CRON": cron},
        )
        assert "no night completed for Demo Fund I" in installed
        assert "no night completed for Demo Fund II" in installed
        start_in = f"in {int((starts - datetime.now(ZoneInfo(ZONE))).total_seconds())} seconds"
        run_cli([PREFECT, "deployment", "run", "nightly/nightly", "--start-in", start_in], env)
        assert datetime.now(ZoneInfo(ZONE)) < starts, "setup took past the nightly's time"

        # nothing takes the nightly's run: the server marks it Late
        def late() -> dict[str, Any] | None:
            runs = api.flow_runs("nightly/nightly")
            found = [r for r in runs if (r.get("state") or {}).get("name") == "Late"]
            return found[0] if found else None

        wait_s = (starts - datetime.now(ZoneInfo(ZONE))).total_seconds() + 60
        nightly = wait_for("the nightly run to be Late", late, wait_s)
        # Demo Fund I's night completes before the deadline; Demo Fund II's never does
        posted = api.http.post("/events", json=[_completed_event("org_demo")])
        assert posted.status_code == 204, posted.text

        def missed_post() -> list[str]:
            return [b for b in bodies if "no night completed for Demo Fund II" in b]

        wait_s = (deadline - datetime.now(ZoneInfo(ZONE))).total_seconds() + WITHIN_S
        (alert,) = wait_for("the missed-night notification", missed_post, wait_s, step=0.5)
        late_by = (datetime.now(ZoneInfo(ZONE)) - deadline).total_seconds()
        assert 0 <= late_by <= WITHIN_S, f"arrived {late_by:.0f} s after the deadline"
        text = json.loads(alert)
        assert text["subject"] == f"fundpipe: no night completed for Demo Fund II by {complete_by}"
        assert f"Demo Fund II (org_demob) by {complete_by} ({ZONE})" in text["text"]
        assert f"nightly run {nightly['name']} is Late: nothing took it" in text["text"]
        assert f"/runs/flow-run/{nightly['id']}" in text["text"]
        assert "{{" not in text["text"]
        assert "{%" not in text["text"]
        time.sleep(QUIET_S)
        assert [b for b in bodies if "Demo Fund I " in b or "Demo Fund I by" in b] == []
        assert len(bodies) == 1, bodies
        print(f"missed-night alert {late_by:.0f} s after the {complete_by} deadline, no worker")
        assert unexpected_tracebacks(procs.log("server")) == []

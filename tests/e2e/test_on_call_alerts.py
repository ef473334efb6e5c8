"""The on-call view end to end: a real `prefect server start`, the alerts installed with
`fundpipe alerts install`, and a small HTTP receiver on loopback standing in for the webhook.

Nights as a person would run them: a clean night (`fundpipe run` against the server) is OK and
sends nothing but the `fundpipe.night.completed` event; a night with a rejected file, and one
with a new $4,500 shortfall, each NEED A PERSON (a state not shown green) and make one POST
arrive naming the organization and linking to the run; a night of the `nightly` deployment, run
by a worker whose service is unreachable, FAILED, and one POST names the organization, the
plain reason and the next step. The runs' logs on the server tell each night at INFO, with no
traceback, no secret and no full account number. Installing the alerts twice leaves the same
automations.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from prefect_processes import (
    FUNDPIPE,
    PREFECT,
    ROOT,
    SAMPLES,
    PrefectApi,
    base_env,
    free_port,
    healthy,
    processes,
    run_cli,
    tonight,
    wait_for,
    webhook_receiver,
)

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.timeout(600)]

BROKEN = SAMPLES / "broken" / "negative_amount.csv"
#: Values that must never reach the server: the client secrets, the roster's account numbers.
SECRET_CANARY = "canary-secret-never-logged"
CANARIES = [SECRET_CANARY, "demo-secret", "000123456789", "7788990011", "4455667788"]
#: How long a clean night is given to (wrongly) make a POST arrive.
QUIET_S = 8.0


def _inbox(data_dir: Path, *files: tuple[Path, str]) -> None:
    inbox = data_dir / "orgs" / "org_demo" / "inbox"
    inbox.mkdir(parents=True, exist_ok=True)
    for source, name in files:
        shutil.copy2(source, inbox / name)


def _clean_samples() -> list[tuple[Path, str]]:
    return [(p, p.name) for p in SAMPLES.iterdir() if p.is_file() and p.suffix != ".md"]


def _latest_run_without_deployment(api: PrefectApi, name: str | None = None) -> dict[str, Any]:
    """The newest run not started by a deployment; with `name`, the newest run whose name starts
    so (the nightly run's child for one organization is `org-night-<name>-<date>-<time>-<id>`)."""
    runs_filter: dict[str, Any] = {"deployment_id": {"is_null_": True}}
    if name is not None:
        runs_filter["name"] = {"like_": f"{name}-"}
    runs = api.http.post(
        "/flow_runs/filter",
        json={"flow_runs": runs_filter, "sort": "START_TIME_DESC", "limit": 1},
    ).json()
    assert runs, "no flow run on the server"
    run: dict[str, Any] = runs[0]
    return run


def _events(api: PrefectApi, name: str) -> list[dict[str, Any]]:
    found = api.http.post(
        "/events/filter", json={"filter": {"event": {"name": [name]}}, "limit": 50}
    )
    found.raise_for_status()
    events: list[dict[str, Any]] = found.json()["events"]
    return events


def _logs_tell_the_night(logs: list[str]) -> None:
    text = "\n".join(logs)
    for canary in CANARIES:
        assert canary not in text, f"{canary} reached the server's logs"
    assert "Traceback" not in text


def _automations(env: dict[str, str]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(run_cli([FUNDPIPE, "alerts", "list", "--json"], env))
    return found


def test_the_on_call_hears_of_bad_nights_and_only_of_those(tmp_path: Path) -> None:
    port = free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    env = base_env(tmp_path / "prefect-home", api_url, tmp_path / "unused")
    env["FUNDPIPE_INBOX_SETTLE_S"] = "0"
    with webhook_receiver() as (hook, bodies), processes(tmp_path / "logs") as procs:
        procs.start(
            "server",
            [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            env,
        )
        wait_for("the Prefect server", lambda: healthy(api_url), 180)
        api = PrefectApi(api_url)

        # installing the alerts twice leaves the same automations
        first = run_cli([FUNDPIPE, "alerts", "install", "--webhook", hook], env)
        assert first.count("created") == 8, first
        installed = _automations(env)
        again = run_cli([FUNDPIPE, "alerts", "install", "--webhook", hook], env)
        assert again.count("unchanged") == 8, again
        assert _automations(env) == installed
        # a changed deadline updates the one automation it concerns, in place
        later = run_cli(
            [FUNDPIPE, "alerts", "install", "--webhook", hook, "--complete-by", "07:00"], env
        )
        assert later.count("updated") == 1, later
        assert [a["id"] for a in _automations(env)] == [a["id"] for a in installed]
        assert [a["name"] for a in installed] == [
            "fundpipe: a file was rejected",
            "fundpipe: a night completed late",
            "fundpipe: a night failed",
            "fundpipe: a run crashed",
            "fundpipe: a run failed",
            "fundpipe: an exception opened",
            "fundpipe: no night completed for org_demo",
        ]
        # the deadline is the server's own watch, opened by the nightly's run: see
        # tests/e2e/test_deadline_alert.py
        no_night = next(a for a in installed if "no night" in a["name"])["trigger"]
        assert no_night.startswith("Proactive: fundpipe.night.completed, fundpipe.night.failed")

        # a clean night: nothing is POSTed, the night.completed event is on the server
        clean = tmp_path / "clean"
        _inbox(clean, *_clean_samples())
        run_cli([FUNDPIPE, "run", "--data-dir", str(clean)], env)
        # the night over both demo organizations, and org_demo's child run, which tells its story
        day = tonight()
        night = _latest_run_without_deployment(api, f"org-night-demo-fund-administration-{day}")
        assert night["state"]["type"] == "COMPLETED", night["state"]
        assert night["state"]["name"] == "Completed"  # a clean night looks clean
        assert night["parent_task_run_id"] is not None
        logs = api.logs(night["id"])
        _logs_tell_the_night(logs)
        assert any(line.startswith("file distributions_q4.csv: processed") for line in logs), logs
        for step in ("ingest: 3 files seen", "sync: ", "reconcile: 0 exceptions", "reports: "):
            assert any(line.startswith(step) for line in logs), (step, logs)
        wait_for("fundpipe.night.completed", lambda: _events(api, "fundpipe.night.completed"), 90)
        # the first thing the run shows: each organization's verdict, by name
        verdict = api.artifacts(night["id"])["fundpipe-verdict"]["data"]
        assert "- **Demo Fund Administration (org_demo)**: **OK**" in verdict
        time.sleep(QUIET_S)
        assert bodies == [], bodies

        # a night with a rejected file: one POST names the file (its exception folded in)
        rejecting = tmp_path / "rejecting"
        _inbox(rejecting, (BROKEN, "q4_typo.csv"))
        done = subprocess.run(
            [FUNDPIPE, "run", "--data-dir", str(rejecting)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert done.returncode == 1, done.stdout + done.stderr  # a file needs a person
        night = _latest_run_without_deployment(api, f"org-night-demo-fund-administration-{day}")
        logs = api.logs(night["id"])
        _logs_tell_the_night(logs)
        rejected_line = next(line for line in logs if line.startswith("file q4_typo.csv:"))
        assert "rejected" in rejected_line
        assert "q4_typo.csv.errors.csv" in rejected_line
        opened = next(line for line in logs if line.startswith("exception EX-"))
        exception_id = opened.split()[1]
        wait_for("a POST naming the file", lambda: [b for b in bodies if "q4_typo.csv" in b], 60)
        time.sleep(QUIET_S)
        (rejected_post,) = bodies  # one incident, one alert: not one more for its exception
        assert "q4_typo.csv rejected (Demo Fund Administration" in rejected_post
        assert "/runs/flow-run/" in rejected_post  # a link to the run
        # its error report: no reports location here, so its path and the machine it is on
        assert "q4_typo.csv.errors.xlsx on host " in rejected_post
        # what the Prefect UI shows of a night that needs a person: not green (a FAILED-type
        # state named so: Prefect colours by type), on the child and on the parent, whose
        # message is the verdict: by name, what, how much, by when
        needs = ("FAILED", "Needs a person")
        assert (night["state"]["type"], night["state"]["name"]) == needs
        parent = _latest_run_without_deployment(api, f"nightly-{day}")
        assert (parent["state"]["type"], parent["state"]["name"]) == needs
        assert "(org_demo): NEEDS A PERSON: q4_typo.csv rejected" in parent["state"]["message"]
        # artifact keys per organization, with plain column labels
        artifacts = api.artifacts(night["id"])
        assert {
            "fundpipe-run-summary-org-demo",
            "fundpipe-exceptions-org-demo",
            "fundpipe-rejected-org-demo-q4-typo-csv",
        } <= set(artifacts)
        table = json.loads(artifacts["fundpipe-exceptions-org-demo"]["data"])
        assert list(table[0]) == [
            "Exception",
            "State",
            "Age (days)",
            "What",
            "Amount",
            "What to do",
        ]
        assert table[0]["Exception"] == exception_id
        # one table of every organization's open exceptions on the parent
        parents = api.artifacts(parent["id"])
        across = json.loads(parents["fundpipe-open-exceptions"]["data"])
        # the organization by its name, where the service knows it
        assert [(r["Organization"], r["Exception"]) for r in across] == [
            ("Demo Fund Administration (org_demo)", exception_id)
        ]
        assert set(across[0]) == {"Organization", "Exception", "Amount", "What", "What to do"}
        # no artifact links a file on the worker's disk (dead in a browser)
        for artifact in [*artifacts.values(), *parents.values()]:
            assert "file://" not in json.dumps(artifact["data"]), artifact["key"]

        # a night whose sheet leaves a vehicle $4,500 short of funds (no file rejected): it
        # needs a person too, and one POST tells the exception, by organization, with a link
        short = tmp_path / "short"
        _inbox(short)
        sheet = SAMPLES / "distributions_q4.csv"
        header = sheet.read_text(encoding="utf-8").splitlines()[0]
        row = "Q4 Real Assets III,veh_demo3,Q4-SHORT,2026-12-15 09:00,America/New_York,ent_demo1"
        (short / "orgs" / "org_demo" / "inbox" / "short.csv").write_text(
            f'{header}\n{row},"$754,500.00",USD,,investor1@example.com\n', encoding="utf-8"
        )
        before = len(bodies)
        short_done = subprocess.run(
            [FUNDPIPE, "run", "--data-dir", str(short)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        # no file rejected, yet the night needs a person: the exit code says so, as for a file
        assert short_done.returncode == 1, short_done.stdout + short_done.stderr
        night = _latest_run_without_deployment(api, f"org-night-demo-fund-administration-{day}")
        assert (night["state"]["type"], night["state"]["name"]) == needs
        assert "$4,500.00" in night["state"]["message"]
        _logs_tell_the_night(api.logs(night["id"]))
        wait_for("a POST for the shortfall", lambda: bodies[before:], 60)
        time.sleep(QUIET_S)
        (short_post,) = bodies[before:]
        assert "(Demo Fund Administration)" in short_post
        assert "$4,500.00" in short_post
        assert "/runs/flow-run/" in short_post
        assert "reconciliation.xlsx on host " in short_post  # the night's workbook, as text

        # a deployment's night whose service is unreachable: Failed, and a POST says why
        run_cli([PREFECT, "work-pool", "create", "fundpipe", "--type", "process"], env)
        run_cli(
            [
                PREFECT,
                "--no-prompt",
                "deploy",
                "--name",
                "nightly",
                "--prefect-file",
                "flows/prefect.yaml",
            ],
            env,
        )
        unreachable = {
            **env,
            "FUNDPIPE_DATA_DIR": str(tmp_path / "unreachable"),
            "FUNDPIPE_BASE_URL": f"http://127.0.0.1:{free_port()}",
            "FUNDPIPE_CLIENT_ID": "night-client",
            "FUNDPIPE_CLIENT_SECRET": SECRET_CANARY,
            "FUNDPIPE_ORG_ID": "org_night",
            "FUNDPIPE_RETRY_DEADLINE_S": "2",
            "PREFECT_WORKER_QUERY_SECONDS": "2",
        }
        procs.start("worker", [PREFECT, "worker", "start", "--pool", "fundpipe"], unreachable)
        before = len(bodies)
        run_cli([PREFECT, "deployment", "run", "nightly/nightly"], env)

        def failed() -> dict[str, Any] | None:
            runs = api.flow_runs("nightly/nightly")
            done = [r for r in runs if (r.get("state") or {}).get("type") == "FAILED"]
            return done[0] if done else None

        run = wait_for("the deployment's run to fail", failed, 180, step=1)
        assert "could not reach the service" in run["state"]["message"]
        # under a worker too, the run's log says why in the plain sentence (logs arrive in
        # batches: wait for the run's last line)
        failed_logs = wait_for(
            "the failed run's logs",
            lambda: (
                (logs := api.logs(run["id"]))
                and any("Finished in state Failed" in line for line in logs)
                and logs
            ),
            30,
        )
        _logs_tell_the_night(failed_logs)
        assert any(line.startswith("could not reach the service") for line in failed_logs)

        # one POST for the outage (not one more for the parent, nor for its child run), naming
        # the organization, the service host and the next step, with a link to the run
        wait_for("a POST naming the organization", lambda: bodies[before:], 60)
        time.sleep(QUIET_S)
        (posted,) = bodies[before:]
        assert "the night of org_night failed" in posted
        assert "could not reach the service" in posted
        assert "(service 127.0.0.1)" in posted
        assert "Next step: check that the service at 127.0.0.1 answers" in posted
        assert f"/runs/flow-run/{run['id']}" in posted
        assert SECRET_CANARY not in posted

        # a plain `fundpipe run` (cron, a shell) that fails alerts the on-call too
        before = len(bodies)
        plain = subprocess.run(
            [FUNDPIPE, "run", "--data-dir", str(tmp_path / "plain")],
            cwd=ROOT,
            env={k: v for k, v in unreachable.items() if not k.startswith("PREFECT_WORKER")},
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        assert plain.returncode == 3, plain.stdout + plain.stderr

        wait_for("a POST for the failed fundpipe run", lambda: bodies[before:], 60)
        time.sleep(QUIET_S)
        (posted,) = bodies[before:]
        assert "fundpipe: the night of org_night failed" in posted
        assert "could not reach the service" in posted
        assert SECRET_CANARY not in posted
        # what the on-call received, for a person reading the test's output
        (tmp_path / "logs" / "webhook.jsonl").write_text("\n".join(bodies), encoding="utf-8")
        (tmp_path / "logs" / "night.log").write_text("\n".join(logs), encoding="utf-8")

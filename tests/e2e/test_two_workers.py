"""Every organization's night on more than one machine (issue 15), as the README's "More than
one machine" section says: a real `prefect server start`, one process work pool, two workers.

A sandbox (`fundpipe sandbox --demo-orgs 3`) serves three organizations over loopback; the
`nightly` deployment is started by hand (`prefect deployment run`, not the cron) with
`FUNDPIPE_FAN_OUT=deployments` and `FUNDPIPE_ORG_CONCURRENCY=2`, so it starts one `org-night`
run per organization and the pool's workers take them. Each worker runs at most two flow runs
at once (`--limit 2`): the parent and its three children are four runs in flight together, so
both workers must take children. What is asserted is what an operator would check: both
workers ran children, the sandbox's request log never shows more than two organizations
talking to the service at once (the global concurrency limit held), and each organization
ended as it would alone (every distribution exactly once, reports under data/reports/<org>/).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
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
    tonight,
    unexpected_tracebacks,
    wait_for,
)
from three_orgs import ORGS, answers, fill_inbox, held_distributions, most_at_once, table_row

from fundpipe.sheets.money import format_cents

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.timeout(600)]

LIMIT = 2
WORKERS = ("worker-a", "worker-b")
#: Added to every read of the service, so one organization's night takes a few seconds.
LATENCY_MS = 400
#: The reads' latency until all three child runs are seen running at once.
HOLD_MS = 3000


def test_two_workers_share_the_night_within_the_concurrency_limit(tmp_path: Path) -> None:
    began = time.monotonic()
    port, sandbox_port = free_port(), free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    sandbox_url = f"http://127.0.0.1:{sandbox_port}"
    data_dir = tmp_path / "data"
    expected = {org: fill_inbox(data_dir, org) for org in ORGS}
    env = base_env(tmp_path / "prefect-home", api_url, data_dir)
    env.update(
        {
            "FUNDPIPE_BASE_URL": sandbox_url,
            "FUNDPIPE_CLIENT_ID": "demo-client",
            "FUNDPIPE_CLIENT_SECRET": "demo-secret",
            "FUNDPIPE_ORGS": ",".join(ORGS),
            "FUNDPIPE_FAN_OUT": "deployments",
            "FUNDPIPE_ORG_CONCURRENCY": str(LIMIT),
            "FUNDPIPE_INBOX_SETTLE_S": "0",
        }
    )
    with processes(tmp_path / "logs") as procs:
        procs.start(
            "sandbox",
            [FUNDPIPE, "sandbox", "--demo-orgs", "3", "--port", str(sandbox_port)],
            env,
        )
        procs.start(
            "server",
            [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            env,
        )
        wait_for("the Prefect server", lambda: healthy(api_url), 180)
        wait_for("the sandbox", lambda: answers(f"{sandbox_url}/_sandbox/clock"), 60)
        run_cli([PREFECT, "work-pool", "create", "fundpipe", "--type", "process"], env)
        run_cli(
            [PREFECT, "--no-prompt", "deploy", "--all", "--prefect-file", "flows/prefect.yaml"],
            env,
        )
        for name in WORKERS:
            procs.start(
                name,
                [PREFECT, "worker", "start", "--pool", "fundpipe", "--name", name, "--limit", "2"],
                {**env, "PREFECT_WORKER_QUERY_SECONDS": "1"},
            )
        api = PrefectApi(api_url)
        # A service slow enough (each read waits HOLD_MS) that the two organizations holding
        # the limit's slots are still at work when the third child run starts, however slowly
        # a loaded machine starts its process; once all three run at once, the usual latency.
        httpx.put(f"{sandbox_url}/_sandbox/faults", json={"latency_ms": HOLD_MS})
        run_cli([PREFECT, "deployment", "run", "nightly/nightly"], env)

        def all_running() -> list[dict[str, Any]] | None:
            runs = api.flow_runs("org-night/org-night")
            states = [(r.get("state") or {}).get("type") for r in runs]
            return runs if len(runs) == len(ORGS) and set(states) == {"RUNNING"} else None

        # all three child runs running at once: the third waits on the limit, not on a worker
        wait_for("the three child runs to run at once", all_running, 180, step=0.5)
        httpx.put(f"{sandbox_url}/_sandbox/faults", json={"latency_ms": LATENCY_MS})

        def finished() -> dict[str, Any] | None:
            runs = api.flow_runs("nightly/nightly")
            done = [r for r in runs if (r.get("state") or {}).get("type") in _FINAL]
            return done[0] if done else None

        parent = wait_for("the nightly run to finish", finished, 240, step=1)
        children = api.flow_runs("org-night/org-night")
        logs = {name: procs.log(name) for name in WORKERS}
        assert parent["state"]["type"] == "COMPLETED", (parent["state"], _tails(procs))

        # one child per organization, each completed, spread over both workers
        day = tonight()
        # names unique within a day: `<flow>[-<org>]-<date>-<time>-<run id's start>`
        assert parent["name"].rsplit("-", 2)[0] == f"nightly-{day}"
        assert sorted(c["name"].rsplit("-", 2)[0] for c in children) == [
            f"org-night-{o}-{day}" for o in ORGS
        ]
        # a tag by name (these have none configured: their id) and one by id
        assert sorted(tag for c in children for tag in c["tags"]) == sorted(
            tag for o in ORGS for tag in (f"org:{o}", f"org-id:{o}")
        )
        assert all(c["state"]["type"] == "COMPLETED" for c in children), children
        ran_by = {c["name"]: [n for n, log in logs.items() if _ran(log, c["id"])] for c in children}
        assert all(len(names) == 1 for names in ran_by.values()), ran_by
        assert {names[0] for names in ran_by.values()} == set(WORKERS), ran_by
        pids = {c["infrastructure_pid"] for c in children}
        assert len(pids) == len(ORGS), pids  # three processes, started by two workers

        # the global concurrency limit held: never more than LIMIT organizations at once
        requests = httpx.get(f"{sandbox_url}/_sandbox/request_log").json()["requests"]
        most, spans = most_at_once(requests)
        t0 = min(start for start, _ in spans.values())
        print({org: (round(a - t0, 1), round(b - t0, 1)) for org, (a, b) in spans.items()})
        assert set(spans) == set(ORGS)
        assert most <= LIMIT, spans
        # ... while all three child runs were running at once (waited for above): so the third
        # organization's first request waited for another's last, on the limit alone

        # each organization ended as it would alone
        table = api.artifacts(parent["id"])["fundpipe-organizations"]["data"]
        for org in ORGS:
            held = held_distributions(sandbox_url, org)
            assert held == dict.fromkeys(expected[org], 1), f"{org}: not each distribution once"
            assert (data_dir / "reports" / org / "latest" / "reconciliation.xlsx").is_file()
            # its row of the parent's table, read back from the child's artifact
            _, state, _, rejected, distributions, total, *_ = table_row(table, org)
            assert (state, rejected, distributions) == ("Completed", "0", str(len(expected[org])))
            assert total == format_cents(sum(expected[org].values()))
        assert sorted(p.name for p in (data_dir / "reports").iterdir()) == sorted(ORGS)
        for name in (*WORKERS, "server", "sandbox"):
            assert unexpected_tracebacks(procs.log(name)) == [], name
    elapsed = time.monotonic() - began
    print(f"two workers, three organizations: {elapsed:.0f} s; at most {most} at once")


_FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


def _ran(worker_log: str, run_id: str) -> bool:
    """Whether the worker started the flow run (both may try; the server lets one)."""
    return (
        f"submitting flow run '{run_id}'" in worker_log
        and f"Aborted submission of flow run '{run_id}'" not in worker_log
    )


def _tails(procs: Any) -> str:
    return json.dumps({n: procs.log(n)[-3000:] for n in (*WORKERS, "sandbox")}, indent=1)

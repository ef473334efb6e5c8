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
import shutil
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from prefect_processes import (
    FUNDPIPE,
    PREFECT,
    SAMPLES,
    PrefectApi,
    base_env,
    free_port,
    healthy,
    processes,
    run_cli,
    unexpected_tracebacks,
    wait_for,
)

from fundpipe.sheets.money import format_cents
from fundpipe.validate.files import validate_files

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.timeout(600)]

ORGS = ("org_demo", "org_demob", "org_democ")
LIMIT = 2
WORKERS = ("worker-a", "worker-b")
#: Added to every read of the service, so one organization's night takes a few seconds.
LATENCY_MS = 400
#: The reads' latency until all three child runs are seen running at once.
HOLD_MS = 3000


def _sheets(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix != ".md")


def _democ_sheet() -> str:
    """org_democ's sheet: org_demob's sample over org_democ's vehicles and investors."""
    (sample,) = _sheets(SAMPLES / "org_demob")
    text = sample.read_text(encoding="utf-8")
    for old, new in (("demob", "democ"), ("DEMOB", "DEMOC"), ("Demo B", "Demo C"), (".b@", ".c@")):
        text = text.replace(old, new)
    return text


def _fill_inboxes(data_dir: Path) -> dict[str, dict[str, int]]:
    """Each organization's sheets in its inbox (their mtime kept: already settled); per
    organization, the cents each external reference of its sheets asks for."""
    expected: dict[str, dict[str, int]] = {}
    for org in ORGS:
        inbox = data_dir / "orgs" / org / "inbox"
        inbox.mkdir(parents=True)
        if org == "org_democ":
            (inbox / "distributions_q4_c.csv").write_text(_democ_sheet(), encoding="utf-8")
        else:
            for sheet in _sheets(SAMPLES if org == "org_demo" else SAMPLES / org):
                shutil.copy2(sheet, inbox / sheet.name)
        expected[org] = {}
        for report in validate_files(_sheets(inbox)):
            assert report.valid, report
            if report.distributions is None:  # a roster
                continue
            sums = report.distributions.groupby("external_reference")["amount_cents"].sum()
            for ref, cents in sums.items():
                expected[org][str(ref)] = expected[org].get(str(ref), 0) + int(cents)
    return expected


def _most_at_once(requests: list[dict[str, Any]]) -> tuple[int, dict[str, tuple[float, float]]]:
    """How many organizations were talking to the service at the same moment, at most: each
    organization is active from its first request's start to its last request's end."""
    spans: dict[str, tuple[float, float]] = {}
    for r in requests:
        if r["org_id"]:
            start, end = spans.get(r["org_id"], (r["started_s"], r["ended_s"]))
            spans[r["org_id"]] = (min(start, r["started_s"]), max(end, r["ended_s"]))
    edges = sorted([(s, 1) for s, _ in spans.values()] + [(e, -1) for _, e in spans.values()])
    active = most = 0
    for _, step in edges:  # an end sorts before a start at the same instant
        active += step
        most = max(most, active)
    return most, spans


def _distributions(sandbox_url: str, org: str) -> dict[str, int]:
    """External reference → how many distributions the service holds for `org`."""
    token = httpx.post(
        f"{sandbox_url}/oauth/token",
        data={"grant_type": "client_credentials"},
        auth=("demo-client", "demo-secret"),
    ).json()["access_token"]
    headers = {"Authorization": f"Bearer {token}", "X-Organization-Id": org}
    found: dict[str, int] = {}
    url: str | None = f"{sandbox_url}/v1/distributions?limit=100"
    while url:
        page = httpx.get(url, headers=headers).json()
        for d in page["data"]:
            found[d["external_reference"]] = found.get(d["external_reference"], 0) + 1
        after = page["data"][-1]["id"] if page.get("has_more") else None
        url = f"{sandbox_url}/v1/distributions?limit=100&starting_after={after}" if after else None
    return found


def _table_row(markdown: str, org: str) -> list[str]:
    """The cells of `org`'s row in the parent's cross-organization table."""
    (line,) = [ln for ln in markdown.splitlines() if ln.startswith(f"| {org} |")]
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_two_workers_share_the_night_within_the_concurrency_limit(tmp_path: Path) -> None:
    began = time.monotonic()
    port, sandbox_port = free_port(), free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    sandbox_url = f"http://127.0.0.1:{sandbox_port}"
    data_dir = tmp_path / "data"
    expected = _fill_inboxes(data_dir)
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
        wait_for("the sandbox", lambda: _answers(f"{sandbox_url}/_sandbox/clock"), 60)
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
        assert sorted(c["name"] for c in children) == [f"org-night-{o}" for o in ORGS]
        assert all(c["state"]["type"] == "COMPLETED" for c in children), children
        ran_by = {c["name"]: [n for n, log in logs.items() if _ran(log, c["id"])] for c in children}
        assert all(len(names) == 1 for names in ran_by.values()), ran_by
        assert {names[0] for names in ran_by.values()} == set(WORKERS), ran_by
        pids = {c["infrastructure_pid"] for c in children}
        assert len(pids) == len(ORGS), pids  # three processes, started by two workers

        # the global concurrency limit held: never more than LIMIT organizations at once
        requests = httpx.get(f"{sandbox_url}/_sandbox/request_log").json()["requests"]
        most, spans = _most_at_once(requests)
        t0 = min(start for start, _ in spans.values())
        print({org: (round(a - t0, 1), round(b - t0, 1)) for org, (a, b) in spans.items()})
        assert set(spans) == set(ORGS)
        assert most <= LIMIT, spans
        # ... while all three child runs were running at once (waited for above): so the third
        # organization's first request waited for another's last, on the limit alone

        # each organization ended as it would alone
        table = api.artifacts(parent["id"])["fundpipe-organizations"]["data"]
        for org in ORGS:
            held = _distributions(sandbox_url, org)
            assert held == dict.fromkeys(expected[org], 1), f"{org}: not each distribution once"
            assert (data_dir / "reports" / org / "latest" / "reconciliation.xlsx").is_file()
            # its row of the parent's table, read back from the child's artifact
            _, state, _, rejected, distributions, total, *_ = _table_row(table, org)
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


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _tails(procs: Any) -> str:
    return json.dumps({n: procs.log(n)[-3000:] for n in (*WORKERS, "sandbox")}, indent=1)

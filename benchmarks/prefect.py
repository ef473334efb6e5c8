"""File arrival and Prefect's per-run overhead, against real Prefect processes.

    python benchmarks/prefect.py [--drops 5] [--runs 5]

1. **Arrival**: `fundpipe serve` runs as a child process (it starts its own `prefect server
   start` on a free loopback port, serves the deployments and watches the inbox; the embedded
   sandbox is the service). The script drops a small distribution sheet into the inbox, waits
   for it to be processed, and measures the seconds from the file *settling* (its last write +
   `FUNDPIPE_INBOX_SETTLE_S`) to the start of the `inbox` run the watcher's event triggered, as
   the server records it. One warm-up drop first (the first flow-run process compiles its
   byte code); then the median of `--drops`.
2. **Overhead**: in this process, against the same server, the `inbox` flow over an empty
   inbox (`--runs` times) against the same work as a plain function call (the flow body without
   Prefect: embedded sandbox up, ingest of an empty inbox, sandbox down). The difference is
   what Prefect costs per run (API round trips for the flow and task runs and their states).

3. **Baseline of the arrival**: `--drops` runs of the `inbox` deployment asked for through the
   API (`POST /deployments/{id}/create_flow_run`, no file): seconds from creation to start —
   what the served deployment takes to pick up a run at all.

Targets (ratios to baselines of the same run): arrival (from the file settling) ≤ 2 × a run asked
for through the API; Prefect's overhead per `inbox` run (the
flow run minus the plain call) ≤ 1.5 × a flow run that does nothing on the same server.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

# This script is called prefect.py: run as `python benchmarks/prefect.py`, its folder comes first
# on sys.path and would shadow the prefect package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SETTLE_S = 1.0
TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}
SHEET = (
    "Distribution Name,Vehicle,External Reference,Payment Date,Timezone,Entity ID,Amount ($),"
    "Currency,Date Override,Notify\n"
    "Bench,veh_demo2,BENCH-{n},2026-12-20 10:00,America/New_York,ent_demo1,100.00,USD,,\n"
)


def _ratio(name: str, measured: float, baseline: float, goal: float, against: str) -> str:
    """A `target` line: a ratio to a baseline of the same run (benchmarks/targets.py's form; this
    script cannot import it, its folder is off sys.path)."""
    value = measured / baseline
    return (
        f"target {name}: {value:.2f}× {against} ({measured:.2f} s vs {baseline:.2f} s) vs ≤ "
        f"{goal:g}× — {'met' if value <= goal else 'short'}"
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(what: str, probe: Any, timeout: float, step: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(step)
    raise SystemExit(f"timed out waiting for {what}")


def _healthy(api: str) -> bool:
    try:
        return httpx.get(f"{api}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _inbox_runs(http: httpx.Client) -> list[dict[str, Any]]:
    deployments = http.post(
        "/deployments/filter", json={"deployments": {"name": {"any_": ["inbox"]}}}
    ).json()
    if not deployments:
        return []
    result: list[dict[str, Any]] = http.post(
        "/flow_runs/filter",
        json={"flow_runs": {"deployment_id": {"any_": [deployments[0]["id"]]}}, "limit": 200},
    ).json()
    return result


def _drop(http: httpx.Client, data_dir: Path, n: int) -> float:
    """Drop sheet `n`; seconds from settling to the start of the run it triggered."""
    before = {run["id"] for run in _inbox_runs(http)}
    target = data_dir / "orgs" / "org_demo" / "inbox" / f"bench_{n}.csv"
    partial = target.with_suffix(".csv.part")
    partial.write_text(SHEET.format(n=n), encoding="utf-8")
    partial.rename(target)
    settled = target.stat().st_mtime + SETTLE_S

    def started() -> dict[str, Any] | None:
        for run in _inbox_runs(http):
            if run["id"] not in before and run.get("start_time"):
                return run
        return None

    run = _wait(f"the run of drop {n}", started, 60)
    processed = data_dir / "orgs" / "org_demo" / "processed" / target.name
    _wait(f"drop {n} processed", processed.exists, 120)
    start = datetime.fromisoformat(run["start_time"].replace("Z", "+00:00")).timestamp()
    return start - settled


def _direct(http: httpx.Client) -> float:
    """Ask the server for an `inbox` run (the API, no file): seconds from creation to its start.

    The baseline of the arrival: what the served deployment takes to pick up a run that exists.
    """
    deployment = http.post(
        "/deployments/filter", json={"deployments": {"name": {"any_": ["inbox"]}}}
    ).json()[0]
    for _ in range(10):  # a server busy with the runs before may refuse for a moment
        answer = http.post(f"/deployments/{deployment['id']}/create_flow_run", json={})
        if answer.is_success:
            break
        time.sleep(1)
    else:
        raise SystemExit(f"create_flow_run answered {answer.status_code}: {answer.text[:300]}")
    created = answer.json()

    def finished() -> dict[str, Any] | None:
        run: dict[str, Any] = http.get(f"/flow_runs/{created['id']}").json()
        state = run.get("state") or {}
        return run if run.get("start_time") and state.get("type") in TERMINAL else None

    run = _wait("the inbox run asked for through the API", finished, 120)
    start = datetime.fromisoformat(run["start_time"].replace("Z", "+00:00")).timestamp()
    made = datetime.fromisoformat(created["created"].replace("Z", "+00:00")).timestamp()
    return start - made


def _overhead(api: str, data_dir: Path, runs: int) -> tuple[float, float, float]:
    """Median seconds of the `inbox` flow, of the same work as a plain call, and of a flow run
    that does nothing (the baseline: what Prefect costs any run on this server)."""
    os.environ["PREFECT_API_URL"] = api
    os.environ["PREFECT_LOGGING_LEVEL"] = "WARNING"
    from fundpipe.app.embedded import service
    from fundpipe.app.prefect import flows as nightly
    from fundpipe.config import Organization, Settings
    from fundpipe.orgs import org_settings
    from fundpipe.submit.ingest import ingest

    empty = data_dir / "overhead"
    (empty / "orgs" / "org_demo" / "inbox").mkdir(parents=True)

    def plain() -> None:
        settings = Settings(_env_file=None, local={"data_dir": empty})  # type: ignore[call-arg]
        with service(settings) as live:
            demo = [Organization(id="org_demo"), Organization(id="org_demob")]
            ingest(org_settings(live, demo[0], among=demo, load_secret=None).settings, None)

    def flow() -> None:
        state = nightly.inbox(data_dir=str(empty), org="org_demo", return_state=True)
        assert state.is_completed(), state

    from prefect import flow as prefect_flow

    @prefect_flow(name="bench-noop")
    def nothing() -> None:
        """A flow that does nothing: what any flow run costs on this server."""

    def noop() -> None:
        state = nothing(return_state=True)
        assert state.is_completed(), state

    timings: dict[str, list[float]] = {"plain": [], "flow": [], "noop": []}
    for fn, name in ((plain, "plain"), (flow, "flow"), (noop, "noop")):
        fn()  # warm-up
        for _ in range(runs):
            t0 = time.perf_counter()
            fn()
            timings[name].append(time.perf_counter() - t0)
    return tuple(statistics.median(timings[k]) for k in ("flow", "plain", "noop"))  # type: ignore[return-value]


def main() -> None:
    """Run both measurements and print the table and the target lines."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drops", type=int, default=5)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="fundpipe-bench-prefect-"))
    data_dir = work / "data"
    (data_dir / "orgs" / "org_demo" / "inbox").mkdir(parents=True)
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "FUNDPIPE_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(
        {
            "PREFECT_HOME": str(work / "prefect"),
            "FUNDPIPE_DATA_DIR": str(data_dir),
            "FUNDPIPE_PREFECT_PORT": str(port),
            "FUNDPIPE_INBOX_INTERVAL_S": "3600",  # only the watcher starts runs here
        }
    )
    os.environ.update({"PREFECT_HOME": env["PREFECT_HOME"]})
    serve = subprocess.Popen(
        [str(BIN / "fundpipe"), "serve"],
        cwd=ROOT,
        env=env,
        stdout=open(work / "serve.log", "wb"),  # noqa: SIM115 - lives as long as the child
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        t0 = time.monotonic()
        _wait("fundpipe serve's Prefect server", lambda: _healthy(api), 180)
        startup = time.monotonic() - t0
        http = httpx.Client(base_url=api, timeout=15)
        _wait(
            "the inbox deployment",
            lambda: (
                _inbox_runs(http) is not None
                and any(
                    d["name"] == "inbox" for d in http.post("/deployments/filter", json={}).json()
                )
            ),
            120,
        )
        warmup = _drop(http, data_dir, 0)
        latencies = [_drop(http, data_dir, n) for n in range(1, args.drops + 1)]
        direct = [_direct(http) for _ in range(args.drops)]
        flow_s, plain_s, noop_s = _overhead(api, data_dir, args.runs)
    finally:
        os.killpg(serve.pid, signal.SIGTERM)
        try:
            serve.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)
        shutil.rmtree(work, ignore_errors=True)

    arrival = statistics.median(latencies)
    asked = statistics.median(direct)
    overhead = flow_s - plain_s
    print()
    print("| measurement | seconds | vs plain call |")
    print("|---|---|---|")
    print(f"| fundpipe serve: server healthy after start | {startup:.1f} | |")
    print(f"| warm-up drop: settled → inbox run started | {warmup:.2f} | |")
    print(
        f"| drop settled → inbox run started (median of {len(latencies)}: "
        f"{', '.join(f'{x:.2f}' for x in latencies)}) | {arrival:.2f} | |"
    )
    print(
        f"| an inbox run asked for through the API: created → started (median of {len(direct)}: "
        f"{', '.join(f'{x:.2f}' for x in direct)}) | {asked:.2f} | |"
    )
    print(f"| plain call: sandbox + ingest of an empty inbox | {plain_s:.2f} | 1.00 |")
    print(f"| the same as the `inbox` flow run | {flow_s:.2f} | {flow_s / plain_s:.2f} |")
    print(f"| Prefect's overhead per run | {overhead:.2f} | |")
    print(f"| a flow run that does nothing (same server) | {noop_s:.2f} | |")
    print()
    print(_ratio("arrival", arrival, asked, 2.0, "a run asked for through the API"))
    print(_ratio("prefect_overhead_per_run", overhead, noop_s, 1.5, "a flow run that does nothing"))


if __name__ == "__main__":
    main()

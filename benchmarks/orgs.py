"""Several organizations in one night: does the wall time grow sub-linearly? (issue 15)

    python benchmarks/orgs.py [--payments 10000] [--rate 2] [--org-concurrency 4]

A sandbox runs as a subprocess (`fundpipe sandbox --demo-orgs 4 --rate-limit-scope client_org`):
its quota is `--rate` requests per second per client *and organization* (a sandbox mode: the
service's interface shows no quotas; `client_org` is how a service that limits each
organization on its own behaves). For 1, 2 and 4 organizations, each with `--payments` payments
(50 investors x payments/50 distributions, one CSV), the sandbox is reset, the investors are
created, and the night is run the way users run it: `fundpipe run` with FUNDPIPE_ORGS and
FUNDPIPE_BASE_URL pointing at the sandbox, the client's rate set to the quota
(FUNDPIPE_RATE_LIMIT_PER_S = `--rate`, as a user sets it for a service's quota) and
FUNDPIPE_ORG_CONCURRENCY = `--org-concurrency`. A low quota (2 req/s by default) makes each
organization's night wait on the service, as a production quota does: one organization's
~16 requests (two creates of 100 distributions, then the sync's pages) take ~8 s of quota. The wall time is the whole
command (its temporary Prefect server included); the requests, the 429s among them, and the
service time (first request to last) come from the sandbox's request log
(`GET /_sandbox/request_log`) for the run.

Prints a table (organizations, wall time, requests, wall time against one organization alone)
and one `target` line per organization count, a ratio to one organization alone measured in
the same run: N orgs take < N x one organization's time.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import logging
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import targets
from pydantic import SecretStr

from fundpipe.client import FundClient
from fundpipe.config import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Settings

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
ORGS = ("org_demo", "org_demob", "org_democ", "org_demod")
COUNTS = (1, 2, 4)
INVESTORS = 50


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"the sandbox did not answer {url} within {timeout:.0f} s")


def _letter(org: str) -> str:
    return org.removeprefix("org_demo")


async def _investors(base_url: str, org: str) -> list[str]:
    """Create the organization's investors; their ids."""
    settings = Settings(
        _env_file=None,
        service={
            "base_url": base_url,
            "client_id": DEMO_CLIENT_ID,
            "client_secret": SecretStr(DEMO_CLIENT_SECRET),
            "org_id": org,
        },
        http={"rate_limit_per_s": 1000.0},
    )
    async with FundClient(settings.client_config()) as client:
        created = await client.create_entities(
            [
                {
                    "name": f"Orgs Bench {org} {i}",
                    "type": "llc",
                    "external_reference": f"OB-{i:03d}",
                }
                for i in range(INVESTORS)
            ]
        )
    return [e.id for e in created]


def _write_sheet(inbox: Path, org: str, investors: list[str], payments: int) -> int:
    """One CSV of `payments` payments (one per investor per distribution); the distributions."""
    rng = random.Random(org)
    distributions = payments // len(investors)
    inbox.mkdir(parents=True, exist_ok=True)
    with open(inbox / f"bench_{org}.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["Distribution Name", "Vehicle", "External Reference", "Payment Date", "Timezone",
             "Entity ID", "Amount ($)", "Currency"]
        )  # fmt: skip
        for d in range(distributions):
            ref = f"OB-{org}-{d:05d}"
            for investor in investors:
                cents = rng.randint(1, 1_000_00)
                writer.writerow(
                    [f"Bench {ref}", f"veh_demo{_letter(org)}1", ref, "2027-01-15 09:00", "UTC",
                     investor, f"{cents // 100}.{cents % 100:02d}", "USD"]
                )  # fmt: skip
    return distributions


def _night(
    sandbox: str, orgs: tuple[str, ...], payments: int, rate: int, args: argparse.Namespace
) -> dict[str, Any]:
    """Reset the sandbox, prepare every organization, run `fundpipe run`; its numbers."""
    httpx.post(f"{sandbox}/_sandbox/reset", json={"seed": "demo"}).raise_for_status()
    httpx.put(
        f"{sandbox}/_sandbox/settings",
        json={
            "rate_limit_requests": rate,
            "rate_limit_window_s": 1,
            "rate_limit_scope": "client_org",
        },
    ).raise_for_status()
    work = Path(tempfile.mkdtemp(prefix=f"fundpipe-orgs-{len(orgs)}-"))
    expected = 0
    for org in orgs:
        investors = asyncio.run(_investors(sandbox, org))
        expected += _write_sheet(work / "data" / "orgs" / org / "inbox", org, investors, payments)
    httpx.delete(f"{sandbox}/_sandbox/request_log").raise_for_status()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "FUNDPIPE_"))}
    env.update(
        {
            "PREFECT_HOME": str(work / "prefect"),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "FUNDPIPE_DATA_DIR": str(work / "data"),
            "FUNDPIPE_BASE_URL": sandbox,
            "FUNDPIPE_CLIENT_ID": DEMO_CLIENT_ID,
            "FUNDPIPE_CLIENT_SECRET": DEMO_CLIENT_SECRET,
            "FUNDPIPE_ORGS": ",".join(orgs),
            "FUNDPIPE_ORG_CONCURRENCY": str(args.org_concurrency),
            "FUNDPIPE_RATE_LIMIT_PER_S": str(rate),
            "FUNDPIPE_INBOX_SETTLE_S": "0",
        }
    )
    started = time.perf_counter()
    done = subprocess.run(
        [str(BIN / "fundpipe"), "run", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    wall = time.perf_counter() - started
    # exit 1 is a night that needs a person: some demo organizations' depositories are short of
    # what they now owe (an exception, not a failure); anything else, or a failed or rejected
    # organization, stops the benchmark
    summary = json.loads(done.stdout) if done.returncode in (0, 1) else None
    if summary is None or summary["totals"]["failed"] or summary["totals"]["rejected"]:
        raise SystemExit(f"fundpipe run exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    created = summary["totals"]["distributions"]
    if created != expected:
        rows = json.dumps(summary["organizations"], indent=1, default=str)
        raise SystemExit(f"{len(orgs)} orgs: {created} distributions, {expected} expected:\n{rows}")
    logged = httpx.get(f"{sandbox}/_sandbox/request_log").json()["requests"]
    limited = sum(1 for r in logged if r["status"] == 429)
    service = max(r["ended_s"] for r in logged) - min(r["started_s"] for r in logged)
    shutil.rmtree(work, ignore_errors=True)
    return {
        "orgs": len(orgs),
        "wall_s": wall,
        "service_s": service,
        "requests": len(logged),
        "limited": limited,
    }


def main() -> None:
    """Run the three nights and print the table and the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--payments", type=int, default=10_000, help="payments per organization")
    parser.add_argument("--rate", type=int, default=2, help="sandbox quota, req/s per org")
    parser.add_argument("--org-concurrency", type=int, default=4, help="FUNDPIPE_ORG_CONCURRENCY")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the setup's retried 429s are counted, not printed
    port = _free_port()
    sandbox = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [str(BIN / "fundpipe"), "sandbox", "--demo-orgs", str(len(ORGS)), "--port", str(port),
         "--rate-limit-scope", "client_org"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        _wait_for(f"{sandbox}/_sandbox/clock")
        print(
            f"{args.payments:,} payments per organization, sandbox quota {args.rate} req/s per "
            f"client and organization, FUNDPIPE_ORG_CONCURRENCY={args.org_concurrency}"
        )
        rows = [_night(sandbox, ORGS[:n], args.payments, args.rate, args) for n in COUNTS]
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)
    alone = rows[0]["wall_s"]
    print(
        f"{'orgs':>4}  {'wall s':>7}  {'service s':>9}  {'requests':>8}  {'429s':>5}  "
        f"{'vs one org':>10}"
    )
    for row in rows:
        print(
            f"{row['orgs']:>4}  {row['wall_s']:>7.1f}  {row['service_s']:>9.1f}  "
            f"{row['requests']:>8}  {row['limited']:>5}  {row['wall_s'] / alone:>9.2f}x"
        )
    for row in rows[1:]:
        n = row["orgs"]
        print(
            targets.ratio(
                f"orgs_sub_linear ({n} orgs)",
                row["wall_s"],
                alone,
                n * 0.99,
                against="one organization alone",
                unit=" s",
                spec=".1f",
                note=f"goal: less than {n}×",
            )
        )


if __name__ == "__main__":
    main()

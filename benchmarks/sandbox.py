"""Sandbox throughput over loopback: creates of 100 distributions × 10 payments, and pages of
100 financial accounts. Plain script: `python benchmarks/sandbox.py`.

The sandbox runs in a thread of this process (uvicorn on 127.0.0.1, SQLite file in WAL mode) and
a sequential httpx client drives it, so client and server share the machine's cores — as they do
when fundpipe runs against the embedded sandbox. Ends with `target …: met|short` lines, each
the CPU of a request (client and server) as a ratio to a small read's (`GET /v1/vehicles`)
measured in the same run.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import targets

from fundpipe.sandbox import SandboxConfig, SandboxServer

CREATES = 15
PAGE_WALKS = 3
SMALL_GETS = 200
# Goals are ratios to the baseline measured in the same run: the CPU of a small authenticated
# read (`GET /v1/vehicles`, 3 vehicles) through the same client, server and process. A create
# of 100 x 10 payments writes ~1,100 rows and answers them; a page serialises 100 accounts.
GOAL_CREATE_VS_SMALL = 25.0
GOAL_PAGE_VS_SMALL = 4.0


def _batch(i: int) -> list[dict[str, Any]]:
    return [
        {
            "name": f"Bench distribution {i}.{d}",
            "vehicle": "veh_demo1",
            "distribution_date": "2027-03-15T09:00:00",
            "distribution_timezone": "America/New_York",
            "external_reference": f"BENCH-{i}-{d}",
            "payments": [
                {"amount": 1_000 + p, "currency": "USD", "entity": f"ent_demo{p % 5 + 1}"}
                for p in range(10)
            ],
        }
        for d in range(100)
    ]


def main() -> None:
    """Run both measurements and print the results."""
    print(f"load average before the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        config = SandboxConfig(
            db_path=Path(tmp) / "bench.sqlite", rate_limit_requests=1_000_000, rate_limit_window_s=1
        )
        with (
            SandboxServer(config) as server,
            httpx.Client(base_url=server.base_url, timeout=60) as http,
        ):
            token = http.post(
                "/oauth/token",
                data={"grant_type": "client_credentials"},
                auth=("demo-client", "demo-secret"),
            ).json()["access_token"]
            headers = {"Authorization": f"Bearer {token}"}

            for _ in range(20):  # warm-up
                http.get("/v1/vehicles", headers=headers).raise_for_status()
            start, cpu_start = time.perf_counter(), time.process_time()
            for _ in range(SMALL_GETS):
                http.get("/v1/vehicles", headers=headers).raise_for_status()
            small_s = (time.perf_counter() - start) / SMALL_GETS
            small_cpu_ms = (time.process_time() - cpu_start) / SMALL_GETS * 1000
            print(
                f"baseline: small read GET /v1/vehicles {1 / small_s:.0f} requests/s "
                f"({small_s * 1000:.1f} ms each, {small_cpu_ms:.2f} ms CPU, {SMALL_GETS} "
                "sequential)"
            )

            bodies = [_batch(i) for i in range(CREATES)]
            timings = []
            cpu_start = time.process_time()
            for i, body in enumerate(bodies):
                start = time.perf_counter()
                response = http.post(
                    "/v1/distributions",
                    headers={**headers, "Idempotency-Key": f"bench-{i}"},
                    json=body,
                )
                timings.append(time.perf_counter() - start)
                assert response.status_code == 201, response.text[:300]
            create_cpu_ms = (time.process_time() - cpu_start) / len(timings) * 1000
            creates_per_s = len(timings) / sum(timings)
            print(
                f"create 100 distributions x 10 payments: {creates_per_s:.1f} requests/s "
                f"({creates_per_s * 1000:.0f} payments/s; median {statistics.median(timings) * 1000:.0f} ms; "
                f"{create_cpu_ms:.0f} ms CPU per request, client and server together)"
            )

            http.post(
                "/_sandbox/bulk_financial_accounts",
                json={"organization": "org_demo", "vehicles": 100, "accounts_per_vehicle": 100},
            ).raise_for_status()
            pages = 0
            start = time.perf_counter()
            cpu_start = time.process_time()
            for _ in range(PAGE_WALKS):
                url: str | None = "/v1/financial_accounts?limit=100"
                while url:
                    page = http.get(url, headers=headers).json()
                    pages += 1
                    url = page["next_page_url"]
            elapsed = time.perf_counter() - start
            page_cpu_ms = (time.process_time() - cpu_start) / pages * 1000
            pages_per_s = pages / elapsed
            print(
                f"page of 100 financial accounts: {pages_per_s:.1f} requests/s "
                f"({pages} pages over {PAGE_WALKS} walks of 10,006 accounts; "
                f"{page_cpu_ms:.1f} ms CPU per page, client and server together)"
            )

    # CPU, not wall: client and server share this process, and on a shared machine the wall
    # time of a phase follows the other work more than this code
    for name, cpu_ms, goal in (
        ("create_100x10_cpu", create_cpu_ms, GOAL_CREATE_VS_SMALL),
        ("page_100_accounts_cpu", page_cpu_ms, GOAL_PAGE_VS_SMALL),
    ):
        print(
            targets.ratio(
                name, cpu_ms, small_cpu_ms, goal, against="a small read's CPU", unit=" ms"
            )
        )


if __name__ == "__main__":
    main()

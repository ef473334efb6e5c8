"""Sandbox throughput over loopback: creates of 100 distributions × 10 payments, and pages of
100 financial accounts. Plain script: `python benchmarks/sandbox.py`.

The sandbox runs in a thread of this process (uvicorn on 127.0.0.1, SQLite file in WAL mode) and
a sequential httpx client drives it, so client and server share the machine's cores — as they do
when fundpipe runs against the embedded sandbox. Ends with `target …: met|short` lines.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from fundpipe.sandbox import SandboxConfig, SandboxServer

CREATES = 15
PAGE_WALKS = 3
GOAL_CREATES_PER_S = 5.0
# In-thread server and client share one process (and the GIL), as in embedded mode; on an idle
# 2-core machine a page costs ~8 ms of CPU here, so 50/s leaves headroom for a busy machine.
GOAL_PAGES_PER_S = 50.0


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

    for name, measured, goal in (
        ("creates_100x10_per_s", creates_per_s, GOAL_CREATES_PER_S),
        ("pages_100_accounts_per_s", pages_per_s, GOAL_PAGES_PER_S),
    ):
        verdict = "met" if measured >= goal else "short"
        print(f"target {name}: {measured:.1f} vs {goal:.0f} — {verdict}")


if __name__ == "__main__":
    main()

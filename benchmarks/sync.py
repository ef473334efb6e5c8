"""Benchmark: fundpipe's sync vs dlt's `rest_api` source, pulling the same sandbox into DuckDB.

World: the demo organization plus 10,000 bulk financial accounts (100 vehicles × 100) and 100
distributions × 100 payments, served by the sandbox over loopback (uvicorn in this process).
Each puller runs in its own subprocess (so its peak RSS is its own) against the same server:

- fundpipe: `fundpipe.sync.pull.sync()` — vehicles, each vehicle's accounts concurrently,
  distributions with their nested payments, entities and contacts → Arrow → DuckDB warehouse.
- dlt: `rest_api_source` with a JSON-link paginator on `next_page_url` for the organization's
  financial accounts and the distributions (payments normalised into a child table) → DuckDB.

Throughput = (financial accounts + payments landed) / wall time of the child. Targets (ratios to dlt
in the same run): fundpipe's throughput ≥ 2× dlt's, its peak RSS ≤ dlt's. Run: `.venv/bin/python benchmarks/sync.py` (needs the `bench` extra for dlt).

History (issue 14, a night's cost grows with the night's work): a fresh sandbox gets 100,000
executed distributions × 3 disbursed payments (300,000 payments) through `POST
/_sandbox/history`; one warehouse is then synced night after night, each sync in its own
subprocess, its service requests counted at the transport: the first sync (full walk), a
re-run with nothing new, a night after 1,000 new (open) distributions, and the night after
that with those 1,000 still open. Targets: nothing new ≤ 0.1 × the first (full) sync of the same run; the 1k night's requests ≤
new/100 + open + C, where C = 10 (vehicle list, 3 account lists, entities, contacts, and the
page where each walk meets known objects). `--history` runs only this part (no dlt needed).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import targets

ORG = "org_demo"
VEHICLES, ACCOUNTS_PER_VEHICLE = 100, 100
DISTRIBUTIONS, PAYMENTS_PER_DISTRIBUTION = 100, 100
HISTORY, HISTORY_PAYMENTS, NEW = 100_000, 3, 1_000
#: requests a night costs whatever its work: vehicle list, 3 account lists, entities, contacts,
#: and the page on which each of the three walks meets what the warehouse holds
C = 10


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_fundpipe(base_url: str, out: Path) -> dict[str, Any]:
    """Run fundpipe's sync into a fresh warehouse; report records and time."""
    from fundpipe.config import Settings
    from fundpipe.sync.pull import sync

    settings = Settings(
        _env_file=None,
        local={"data_dir": out},
        http={"rate_limit_per_s": 1_000_000, "max_concurrency": 8},
    ).with_service(base_url)
    started = time.perf_counter()
    result = sync(settings)
    elapsed = time.perf_counter() - started
    return {
        "seconds": elapsed,
        "accounts": result.counts["financial_accounts"],
        "payments": result.counts["distribution_payments"],
        "peak_rss_mb": _peak_rss_mb(),
    }


class _Counting(httpx.AsyncBaseTransport):
    """The network, counting the service requests (`/v1/...`) that go through it."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.requests = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.startswith("/v1/"):
            self.requests += 1
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def child_history(base_url: str, out: Path) -> dict[str, Any]:
    """One night's sync into the warehouse of `out` (kept between nights); requests and time."""
    from fundpipe.config import Settings
    from fundpipe.sync.pull import sync

    settings = Settings(
        _env_file=None,
        local={"data_dir": out},
        http={"rate_limit_per_s": 1_000_000, "max_concurrency": 8},
    ).with_service(base_url)
    transport = _Counting()
    started = time.perf_counter()
    result = sync(settings, transport=transport)
    elapsed = time.perf_counter() - started
    return {
        "seconds": elapsed,
        "requests": transport.requests,
        "distributions": result.counts["distributions"],
        "payments": result.counts["distribution_payments"],
        "walks": result.walks,
        "reread_open": result.reread_open,
        "peak_rss_mb": _peak_rss_mb(),
    }


def child_dlt(base_url: str, out: Path, token: str) -> dict[str, Any]:
    """Run dlt's rest_api source into DuckDB; report records and time."""
    import dlt
    import duckdb
    from dlt.sources.rest_api import rest_api_source

    started = time.perf_counter()
    source = rest_api_source(
        {
            "client": {
                "base_url": base_url,
                "auth": {"type": "bearer", "token": token},
                "headers": {"X-Organization-Id": ORG},
                "paginator": {"type": "json_link", "next_url_path": "next_page_url"},
            },
            "resource_defaults": {
                "write_disposition": "replace",
                "endpoint": {"params": {"limit": 100}, "data_selector": "data"},
            },
            "resources": [
                {"name": "financial_accounts", "endpoint": {"path": "/v1/financial_accounts"}},
                {"name": "distributions", "endpoint": {"path": "/v1/distributions"}},
            ],
        }
    )
    db = out / "dlt.duckdb"
    pipeline = dlt.pipeline(
        pipeline_name="bench_sync",
        destination=dlt.destinations.duckdb(str(db)),
        dataset_name="bench",
        pipelines_dir=str(out / "pipelines"),
    )
    pipeline.run(source)
    elapsed = time.perf_counter() - started
    con = duckdb.connect(str(db), read_only=True)
    try:
        accounts = con.execute("SELECT count(*) FROM bench.financial_accounts").fetchone()
        payments = con.execute(
            "SELECT count(*) FROM bench.distributions__payments__data"
        ).fetchone()
    finally:
        con.close()
    return {
        "seconds": elapsed,
        "accounts": int(accounts[0]) if accounts else 0,
        "payments": int(payments[0]) if payments else 0,
        "peak_rss_mb": _peak_rss_mb(),
    }


def _seed(base_url: str) -> str:
    """Fill the sandbox; return a bearer token of the demo client for dlt."""
    with httpx.Client(base_url=base_url, timeout=120) as http:
        bulk = http.post(
            "/_sandbox/bulk_financial_accounts",
            json={
                "organization": ORG,
                "vehicles": VEHICLES,
                "accounts_per_vehicle": ACCOUNTS_PER_VEHICLE,
            },
        )
        bulk.raise_for_status()
        token = http.post(
            "/oauth/token",
            data={"grant_type": "client_credentials"},
            auth=("demo-client", "demo-secret"),
        )
        token.raise_for_status()
        access = str(token.json()["access_token"])
        headers = {"Authorization": f"Bearer {access}", "X-Organization-Id": ORG}
        body = [
            {
                "name": f"bench {d}",
                "vehicle": "veh_demo1",
                "external_reference": f"BENCH-{d}",
                "distribution_date": "2031-06-01T00:00:00Z",
                "payments": [
                    {"amount": 100 + p, "currency": "USD", "entity": f"ent_demo{p % 5 + 1}"}
                    for p in range(PAYMENTS_PER_DISTRIBUTION)
                ],
            }
            for d in range(DISTRIBUTIONS)
        ]
        created = http.post("/v1/distributions", json=body, headers=headers)
        created.raise_for_status()
        return access


def _run_child(kind: str, base_url: str, token: str, out: Path | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"bench-sync-{kind}-") as tmp:
        proc = subprocess.run(
            [sys.executable, __file__, "--child", kind, "--base-url", base_url, "--out",
             str(out or tmp), "--token", token],
            capture_output=True,
            text=True,
            timeout=280,
            check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            raise SystemExit(f"{kind} child failed:\n{proc.stderr[-4000:]}")
        return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def _new_distributions(http: httpx.Client, token: str, count: int) -> None:
    """`count` new distributions (one payment each, dated 2031: still open) in batches of 100."""
    headers = {"Authorization": f"Bearer {token}", "X-Organization-Id": ORG}
    for start in range(0, count, 100):
        body = [
            {
                "name": f"night {n}",
                "vehicle": "veh_demo1",
                "external_reference": f"NIGHT-{n}",
                "distribution_date": "2031-06-01T00:00:00Z",
                "payments": [{"amount": 100 + n, "currency": "USD", "entity": "ent_demo1"}],
            }
            for n in range(start, min(start + 100, count))
        ]
        http.post("/v1/distributions", json=body, headers=headers).raise_for_status()


def history() -> None:
    """Nights over a long history: requests and wall time of each sync, and the target lines."""
    from fundpipe.sandbox import SandboxConfig, SandboxServer

    config = SandboxConfig(seed="demo", rate_limit_requests=10_000_000, rate_limit_window_s=1)
    with (
        SandboxServer(config) as server,
        tempfile.TemporaryDirectory(prefix="bench-sync-history-") as tmp,
        httpx.Client(base_url=server.base_url, timeout=600) as http,
    ):
        started = time.perf_counter()
        seeded = http.post(
            "/_sandbox/history",
            json={
                "vehicle": "veh_demo1",
                "distributions": HISTORY,
                "payments_per_distribution": HISTORY_PAYMENTS,
            },
        )
        seeded.raise_for_status()
        print(
            f"history: {HISTORY:,} executed distributions, {HISTORY * HISTORY_PAYMENTS:,} "
            f"payments seeded in {time.perf_counter() - started:.1f} s"
        )
        token = http.post(
            "/oauth/token",
            data={"grant_type": "client_credentials"},
            auth=("demo-client", "demo-secret"),
        )
        token.raise_for_status()
        access = str(token.json()["access_token"])
        nights: dict[str, dict[str, Any]] = {}
        out = Path(tmp)
        nights["first (full)"] = _run_child("history", server.base_url, "", out)
        nights["nothing new"] = _run_child("history", server.base_url, "", out)
        _new_distributions(http, access, NEW)
        nights[f"{NEW:,} new"] = _run_child("history", server.base_url, "", out)
        nights[f"{NEW:,} still open"] = _run_child("history", server.base_url, "", out)
    print(
        f"{'night':<16} {'requests':>9} {'seconds':>8} {'distributions':>14} {'payments':>9} "
        f"{'re-read open':>13}  walks"
    )
    for name, r in nights.items():
        walks = ", ".join(f"{k} {v}" for k, v in r["walks"].items())
        print(
            f"{name:<16} {r['requests']:>9,} {r['seconds']:>8.2f} {r['distributions']:>14,} "
            f"{r['payments']:>9,} {r['reread_open']:>13,}  {walks}"
        )
    idle, full = nights["nothing new"], nights["first (full)"]
    print(
        targets.ratio(
            "sync_rerun_nothing_new",
            idle["seconds"],
            full["seconds"],
            0.1,
            against="the first, full sync",
            unit=" s",
            note=f"{HISTORY * HISTORY_PAYMENTS:,} payments of history",
        )
    )
    for name, new, still_open in ((f"{NEW:,} new", NEW, 0), (f"{NEW:,} still open", 0, NEW)):
        print(
            targets.count(
                f"sync_requests_with_history ({name})",
                nights[name]["requests"],
                new // 100 + still_open + C,
                how=f"new/100 + open + C = {new}/100 + {still_open} + {C}",
            )
        )


def main() -> None:
    """Seed the sandbox, run both pullers, print the comparison and the target line."""
    from fundpipe.sandbox import SandboxConfig, SandboxServer

    config = SandboxConfig(seed="demo", rate_limit_requests=10_000_000, rate_limit_window_s=1)
    with SandboxServer(config) as server:
        base_url = server.base_url
        token = _seed(base_url)
        results = {kind: _run_child(kind, base_url, token) for kind in ("fundpipe", "dlt")}
    print(
        f"{'puller':<10} {'accounts':>9} {'payments':>9} {'seconds':>8} {'records/s':>10} {'peak RSS MB':>12}"
    )
    rates = {}
    for kind, r in results.items():
        records = r["accounts"] + r["payments"]
        rates[kind] = records / r["seconds"]
        print(
            f"{kind:<10} {r['accounts']:>9,} {r['payments']:>9,} {r['seconds']:>8.2f} "
            f"{rates[kind]:>10,.0f} {r['peak_rss_mb']:>12.0f}"
        )
    expected = VEHICLES * ACCOUNTS_PER_VEHICLE
    for kind, r in results.items():
        if r["accounts"] < expected or r["payments"] != DISTRIBUTIONS * PAYMENTS_PER_DISTRIBUTION:
            print(f"warning: {kind} landed {r['accounts']} accounts / {r['payments']} payments")
    print(
        targets.ratio(
            "sync_throughput_vs_dlt",
            rates["fundpipe"],
            rates["dlt"],
            2.0,
            against="dlt",
            unit=" records/s",
            spec=",.0f",
            higher_is_better=True,
        )
    )
    print(
        targets.ratio(
            "sync_peak_rss",
            results["fundpipe"]["peak_rss_mb"],
            results["dlt"]["peak_rss_mb"],
            1.0,
            against="dlt",
            unit=" MB",
            spec=".0f",
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", choices=("fundpipe", "dlt", "history"))
    parser.add_argument("--history", action="store_true", help="only the history nights")
    parser.add_argument("--base-url")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--token")
    args = parser.parse_args()
    if args.child == "fundpipe":
        print(json.dumps(child_fundpipe(args.base_url, args.out)))
    elif args.child == "dlt":
        print(json.dumps(child_dlt(args.base_url, args.out, args.token)))
    elif args.child == "history":
        print(json.dumps(child_history(args.base_url, args.out)))
    elif args.history:
        history()
    else:
        main()
        history()

"""Benchmark: fundpipe's sync vs dlt's `rest_api` source, pulling the same sandbox into DuckDB.

World: the demo organization plus 10,000 bulk financial accounts (100 vehicles × 100) and 100
distributions × 100 payments, served by the sandbox over loopback (uvicorn in this process).
Each puller runs in its own subprocess (so its peak RSS is its own) against the same server:

- fundpipe: `fundpipe.sync.pull.sync()` — vehicles, each vehicle's accounts concurrently,
  distributions with their nested payments, entities and contacts → Arrow → DuckDB warehouse.
- dlt: `rest_api_source` with a JSON-link paginator on `next_page_url` for the organization's
  financial accounts and the distributions (payments normalised into a child table) → DuckDB.

Throughput = (financial accounts + payments landed) / wall time of the child. Target: fundpipe
≥ 2× dlt. Run: `.venv/bin/python benchmarks/sync.py` (needs the `bench` extra for dlt).
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

ORG = "org_demo"
VEHICLES, ACCOUNTS_PER_VEHICLE = 100, 100
DISTRIBUTIONS, PAYMENTS_PER_DISTRIBUTION = 100, 100


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_fundpipe(base_url: str, out: Path) -> dict[str, Any]:
    """Run fundpipe's sync into a fresh warehouse; report records and time."""
    from fundpipe.config import Settings
    from fundpipe.sync.pull import sync

    settings = Settings(
        data_dir=out,
        rate_limit_per_s=1_000_000,
        max_concurrency=8,
        _env_file=None,  # type: ignore[call-arg]
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


def _run_child(kind: str, base_url: str, token: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"bench-sync-{kind}-") as tmp:
        proc = subprocess.run(
            [sys.executable, __file__, "--child", kind, "--base-url", base_url, "--out", tmp,
             "--token", token],
            capture_output=True,
            text=True,
            timeout=280,
            check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            raise SystemExit(f"{kind} child failed:\n{proc.stderr[-4000:]}")
        return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


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
    ratio = rates["fundpipe"] / rates["dlt"]
    verdict = "met" if ratio >= 2 else "short"
    print(f"target sync_throughput_vs_dlt: {ratio:.2f}x vs 2.00x — {verdict}")
    print(
        f"target sync_peak_rss: fundpipe {results['fundpipe']['peak_rss_mb']:.0f} MB vs "
        f"dlt {results['dlt']['peak_rss_mb']:.0f} MB — "
        f"{'met' if results['fundpipe']['peak_rss_mb'] <= results['dlt']['peak_rss_mb'] else 'short'}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", choices=("fundpipe", "dlt"))
    parser.add_argument("--base-url")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--token")
    args = parser.parse_args()
    if args.child == "fundpipe":
        print(json.dumps(child_fundpipe(args.base_url, args.out)))
    elif args.child == "dlt":
        print(json.dumps(child_dlt(args.base_url, args.out, args.token)))
    else:
        main()

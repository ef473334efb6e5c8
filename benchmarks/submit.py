"""Submission throughput: 10,000 payments in 100 distributions through `fundpipe.submit.ingest`.

    python benchmarks/submit.py [--rate 10] [--batch-size 1] [--concurrency 8]

The sandbox runs in a child process (`SandboxServer` on 127.0.0.1; its own interpreter, so it
does not share the pipeline's GIL) with 20 ms of added latency per request and a per-client
rate limit of R requests/s (R x 2 requests per 2 s window); the client is set to R requests/s.

The drop: 10 CSV files of 10 distributions x 100 payments (100 distinct entities, created
before the measurement). `ingest()` runs end to end (inbox → validate → plan → pre-flight →
ledger → submit); the script prints the whole run's wall time and, for the submission itself
(the create requests, from the first intent to the last outcome), requests/s beside R.

Batch size: the service accepts up to 100 distributions per create, so 10,000 payments could be
10 requests (one per file) — far too few to say anything about a sustained rate. The default is
**1 distribution (100 payments) per request** — the most requests this workload can make:
100 create requests, ~10 s of sending at the default R = 10, so the rate limiter, not the
start-up burst, decides the result. Each request carries 100 payments, so its CPU cost (client
body hashing/serialising and response parsing, sandbox inserts) is ~20x that of the one-payment
creates of benchmarks/client.py. The client schedules requests on absolute time (event-loop lag
costs no slots); on a shared 2-core machine (load ~1.7) R = 20 comes out at ~19.0 req/s and
R = 10 at ~9.6 (the leaky bucket it replaced gave ~16-17 and ~9.1-9.5).

Target: the submission's requests/s ≥ 90 % of R.

    python benchmarks/submit.py --history 100000 [--new 1000]

The history night (issue 14): an in-process sandbox with `--history` executed distributions
seeded in bulk (`POST /_sandbox/history`), one sync into the warehouse, then a night of `--new`
distributions (one payment each, existing investors) ingested. Prints the requests the ingest
sent, by endpoint, and one `target` line: requests ≤ new/100 + open + 10 (nothing is open).
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import logging
import multiprocessing
import random
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import psutil
import targets
from pydantic import SecretStr

from fundpipe.app.cli.process import frozen_gc
from fundpipe.client import FundClient
from fundpipe.config import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, DEMO_ORG_ID, Settings
from fundpipe.submit.ingest import ingest

LATENCY_MS = 20
WINDOW_S = 2.0
FILES = 10
DISTRIBUTIONS_PER_FILE = 10
PAYMENTS_PER_DISTRIBUTION = 100


def _serve(queue: Any, stop: Any) -> None:
    """Child process: run the sandbox on loopback until told to stop."""
    from fundpipe.sandbox import SandboxConfig, SandboxServer

    logging.disable(logging.CRITICAL)
    with SandboxServer(SandboxConfig(seed="demo")) as server:
        queue.put(server.base_url)
        stop.wait()


async def _create_entities(settings: Settings) -> list[str]:
    async with FundClient(settings.client_config()) as client:
        created = await client.create_entities(
            [
                {
                    "name": f"Bench Investor {i}",
                    "type": "llc",
                    "external_reference": f"BENCH-E{i:03d}",
                }
                for i in range(PAYMENTS_PER_DISTRIBUTION)
            ]
        )
    return [e.id for e in created]


def _write_drop(inbox: Path, entities: list[str]) -> int:
    rng = random.Random(5)
    total = 0
    for f in range(FILES):
        with open(inbox / f"bench_{f:02d}.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(
                ["Distribution Name", "Vehicle", "External Reference", "Payment Date",
                 "Timezone", "Entity ID", "Amount ($)", "Currency"]
            )  # fmt: skip
            for d in range(DISTRIBUTIONS_PER_FILE):
                ref = f"BENCH-{f:02d}-{d:02d}"
                for entity in entities:
                    cents = rng.randint(1, 1_000_00)
                    total += cents
                    writer.writerow(
                        [f"Bench {ref}", "veh_demo1", ref, "2027-01-15 09:00", "UTC", entity,
                         f"{cents // 100}.{cents % 100:02d}", "USD"]
                    )  # fmt: skip
    return total


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the results and the target line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rate", type=float, default=10.0, help="R, requests per second")
    parser.add_argument("--batch-size", type=int, default=1, help="distributions per create")
    parser.add_argument("--concurrency", type=int, default=8, help="client max_concurrency")
    parser.add_argument("--history", type=int, default=0, help="history night: distributions")
    parser.add_argument("--new", type=int, default=1_000, help="history night: new ones")
    args = parser.parse_args(argv)
    if args.history:
        return history_night(args.history, args.new)
    rate: float = args.rate
    logging.getLogger("fundpipe").setLevel(logging.ERROR)
    ctx = multiprocessing.get_context("spawn")
    queue, stop = ctx.Queue(), ctx.Event()
    proc = ctx.Process(target=_serve, args=(queue, stop), daemon=True)
    proc.start()
    try:
        base_url = queue.get(timeout=60)
        with tempfile.TemporaryDirectory() as tmp, httpx.Client(base_url=base_url) as control:
            data_dir = Path(tmp) / "data"
            (data_dir / "inbox").mkdir(parents=True)
            settings = Settings(
                _env_file=None,
                service={
                    "base_url": base_url,
                    "client_id": DEMO_CLIENT_ID,
                    "client_secret": SecretStr(DEMO_CLIENT_SECRET),
                    "org_id": DEMO_ORG_ID,
                },
                http={"rate_limit_per_s": rate, "max_concurrency": args.concurrency},
                local={"data_dir": data_dir},
            )
            control.put(
                "/_sandbox/settings",
                json={"rate_limit_requests": 1_000_000, "rate_limit_window_s": WINDOW_S},
            ).raise_for_status()
            entities = asyncio.run(_create_entities(settings))
            total_cents = _write_drop(data_dir / "inbox", entities)
            control.put("/_sandbox/faults", json={"latency_ms": LATENCY_MS}).raise_for_status()
            control.put(
                "/_sandbox/settings",
                json={"rate_limit_requests": int(rate * WINDOW_S), "rate_limit_window_s": WINDOW_S},
            ).raise_for_status()
            time.sleep(WINDOW_S + 0.2)  # start in a fresh server-side window
            sandbox = psutil.Process(proc.pid)
            cpu_sandbox, cpu_pipeline = sum(sandbox.cpu_times()[:2]), time.process_time()
            started = time.perf_counter()
            result = ingest(
                settings, settle_s=0, batch_size=args.batch_size, around_submit=frozen_gc
            )
            wall = time.perf_counter() - started
            cpu_sandbox = sum(sandbox.cpu_times()[:2]) - cpu_sandbox
            cpu_pipeline = time.process_time() - cpu_pipeline
            load = psutil.getloadavg()[0]
            control.put("/_sandbox/faults", json={"latency_ms": 0}).raise_for_status()
            control.put(
                "/_sandbox/settings",
                json={"rate_limit_requests": 1_000_000, "rate_limit_window_s": WINDOW_S},
            ).raise_for_status()
            created = asyncio.run(_count_payments(settings))
    finally:
        stop.set()
        proc.join(timeout=15)
        if proc.is_alive():
            proc.terminate()
    assert result.submit is not None, "nothing was submitted"
    states = {f.state for f in result.files}
    assert states == {"processed"}, f"files ended {states}"
    assert created == (
        FILES * DISTRIBUTIONS_PER_FILE,
        FILES * DISTRIBUTIONS_PER_FILE * PAYMENTS_PER_DISTRIBUTION,
        total_cents,
    ), created
    sent = result.submit.requests_sent
    per_s = sent / result.submit.elapsed_s
    print(
        f"sandbox: loopback, +{LATENCY_MS} ms per request, rate limit R = {rate:.0f} req/s "
        f"({rate * WINDOW_S:.0f} per {WINDOW_S:.0f} s window)"
    )
    print(
        f"drop: {FILES} files, {created[0]} distributions, {created[1]:,} payments, "
        f"{total_cents // 100:,}.{total_cents % 100:02d} USD — all created, amounts checked"
    )
    print(
        f"batch size: {args.batch_size} distribution(s) per create request; "
        f"client max_concurrency {args.concurrency}"
    )
    print(f"ingest wall time (inbox → validate → plan → submit): {wall:.2f} s")
    print(
        f"submission: {sent} create requests in {result.submit.elapsed_s:.2f} s = "
        f"{per_s:.1f} requests/s beside R = {rate:.0f}"
    )
    print(
        f"CPU during the run: pipeline {cpu_pipeline:.1f} s, sandbox {cpu_sandbox:.1f} s "
        f"({(cpu_pipeline + cpu_sandbox) / wall:.2f} cores busy on average; "
        f"load average {load:.1f} on {psutil.cpu_count()} cores)"
    )
    print(
        targets.ratio(
            "submission_rate",
            per_s,
            rate,
            0.9,
            against="R",
            unit="/s",
            spec=".1f",
            higher_is_better=True,
        )
    )
    return 0


async def _count_payments(settings: Settings) -> tuple[int, int, int]:
    async with FundClient(settings.client_config()) as client:
        distributions = payments = cents = 0
        async for d in client.list_distributions():
            distributions += 1
            async for p in client.list_distribution_payments(d.id):
                payments += 1
                cents += p.amount
    return distributions, payments, cents


class _Counting(httpx.AsyncBaseTransport):
    """The sandbox's transport, counting service requests by method and first path segment."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.seen: Counter[str] = Counter()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        parts = request.url.path.split("/")
        self.seen[f"{request.method} /{'/'.join(parts[1:3])}"] += 1
        return await self.inner.handle_async_request(request)


def history_night(history: int, new: int) -> int:
    """Seed ``history`` distributions, sync, ingest ``new`` ones; print the requests sent."""
    from fundpipe.sandbox import SandboxConfig, create_app
    from fundpipe.sync.pull import sync

    logging.getLogger("fundpipe").setLevel(logging.ERROR)
    app = create_app(SandboxConfig(rate_limit_requests=1_000_000, rate_limit_window_s=1))
    transport = httpx.ASGITransport(app=app)
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        (data_dir / "inbox").mkdir(parents=True)
        settings = Settings(
            _env_file=None, local={"data_dir": data_dir}, http={"rate_limit_per_s": 100_000.0}
        ).with_service("http://sandbox.test")

        async def seed() -> None:
            async with httpx.AsyncClient(transport=transport, base_url="http://sandbox.test") as c:
                body = {"vehicle": "veh_demo1", "distributions": history}
                (await c.post("/_sandbox/history", json=body)).raise_for_status()

        asyncio.run(seed())
        started = time.perf_counter()
        sync(settings, transport=transport)
        synced = time.perf_counter() - started
        with open(data_dir / "inbox" / "night.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(
                ["Distribution Name", "Vehicle", "External Reference", "Payment Date",
                 "Timezone", "Entity ID", "Amount ($)", "Currency"]
            )  # fmt: skip
            for i in range(new):
                writer.writerow(
                    [f"Night {i}", "veh_demo1", f"NIGHT-{i:06d}", "2027-01-15 09:00", "UTC",
                     f"ent_demo{i % 5 + 1}", "1.00", "USD"]
                )  # fmt: skip
        counting = _Counting(transport)
        started = time.perf_counter()
        result = ingest(settings, transport=counting, settle_s=0, around_submit=frozen_gc)
        wall = time.perf_counter() - started
    states = {f.state for f in result.files}
    assert states == {"processed"}, f"files ended {states}"
    sent = sum(counting.seen.values())
    print(f"history: {history:,} executed distributions, synced in {synced:.1f} s")
    print(f"night: {new:,} new distributions, ingested in {wall:.2f} s (in-process sandbox)")
    print(f"requests: {sent} — " + ", ".join(f"{k} {v}" for k, v in sorted(counting.seen.items())))
    goal = new / 100 + 10
    print(targets.count("night_requests", sent, goal, how=f"{new:,} new / 100 + 0 open + 10"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

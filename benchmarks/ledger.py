"""Client CPU per request, ledger included: `fundpipe.submit.execute` against a plain client loop.

    python benchmarks/ledger.py [--distributions 1000] [--payments 5] [--concurrency 8]

The sandbox runs in a child process (`SandboxServer` on 127.0.0.1, its own interpreter) with no
added latency and a rate limit far above what the client reaches. The drop: 10 CSV files of
D/10 distributions x P payments over P existing entities (default 1,000 x 5 = 5,000 payments),
sent one distribution per create request (``batch_size=1``), so ~1,000 requests.

Measured in one run, each on a fresh ledger and fresh external references:

- **client loop** (the baseline): the same 1,000 create bodies through `FundClient` with
  `concurrency` requests in flight and the pipeline's Idempotency-Keys, no ledger at all;
- **ingest, chunk N**: `fundpipe.submit.ingest.ingest` end to end, with CPU counted over
  `execute()` only (resolve, keys, intents, sends, outcomes, payment marks — every thread of
  the pipeline process; validation and planning excluded). ``chunk 1`` commits one intent and
  one outcome batch per request (the per-request ledger's cost); the default chunk
  (8 x concurrency) commits one intent statement and one outcome batch per chunk.

Prints CPU ms per request and its ratio to the client loop, and one `target` line: client CPU
per request, ledger included, at the default chunk ≤ 1.5 × the client loop's of the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import functools
import logging
import multiprocessing
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psutil
import targets
from pydantic import SecretStr

import fundpipe.submit.ingest as ingest_module
from fundpipe.app.cli.process import frozen_gc
from fundpipe.client import FundClient
from fundpipe.config import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, DEMO_ORG_ID, Settings
from fundpipe.keys import idempotency_key
from fundpipe.submit.execute import execute

FILES = 10
#: The ledger (intents, outcomes, payment marks) may add half of what the client loop costs.
GOAL_RATIO = 1.5


def _serve(queue: Any, stop: Any) -> None:
    """Child process: run the sandbox on loopback until told to stop."""
    from fundpipe.sandbox import SandboxConfig, SandboxServer

    logging.disable(logging.CRITICAL)
    with SandboxServer(SandboxConfig(seed="demo")) as server:
        queue.put(server.base_url)
        stop.wait()


def _settings(base_url: str, data_dir: Path, concurrency: int) -> Settings:
    return Settings(
        _env_file=None,
        service={
            "base_url": base_url,
            "client_id": DEMO_CLIENT_ID,
            "client_secret": SecretStr(DEMO_CLIENT_SECRET),
            "org_id": DEMO_ORG_ID,
        },
        http={"rate_limit_per_s": 100_000.0, "max_concurrency": concurrency},
        local={"data_dir": data_dir},
    )


async def _create_entities(settings: Settings, n: int) -> list[str]:
    async with FundClient(settings.client_config()) as client:
        created = await client.create_entities(
            [
                {"name": f"Ledger Bench {i}", "type": "llc", "external_reference": f"LB-E{i:03d}"}
                for i in range(n)
            ]
        )
    return [e.id for e in created]


def _amounts(distributions: int, payments: int) -> list[list[int]]:
    rng = random.Random(14)
    return [[rng.randint(1, 1_000_00) for _ in range(payments)] for _ in range(distributions)]


def _write_drop(inbox: Path, prefix: str, entities: list[str], amounts: list[list[int]]) -> None:
    per_file = len(amounts) // FILES
    for f in range(FILES):
        with open(inbox / f"{prefix}_{f:02d}.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(
                ["Distribution Name", "Vehicle", "External Reference", "Payment Date",
                 "Timezone", "Entity ID", "Amount ($)", "Currency"]
            )  # fmt: skip
            for d in range(per_file):
                ref = f"{prefix}-{f:02d}-{d:04d}"
                for entity, cents in zip(entities, amounts[f * per_file + d], strict=True):
                    writer.writerow(
                        [f"Bench {ref}", "veh_demo1", ref, "2027-01-15 09:00", "UTC", entity,
                         f"{cents // 100}.{cents % 100:02d}", "USD"]
                    )  # fmt: skip


async def _client_loop(
    settings: Settings, prefix: str, entities: list[str], amounts: list[list[int]]
) -> tuple[int, float]:
    """The baseline: the same creates through FundClient, no ledger. Returns (requests, CPU s)."""
    async with FundClient(settings.client_config()) as client:
        gate = asyncio.Semaphore(settings.http.max_concurrency)

        async def one(i: int, cents: list[int]) -> None:
            body = [
                {
                    "name": f"Bench {prefix}-{i:04d}",
                    "vehicle": "veh_demo1",
                    "external_reference": f"{prefix}-{i:04d}",
                    "distribution_date": "2027-01-15T09:00:00+00:00",
                    "distribution_timezone": "UTC",
                    "payments": [
                        {"entity": e, "amount": c, "currency": "USD"}
                        for e, c in zip(entities, cents, strict=True)
                    ],
                }
            ]
            key = idempotency_key(settings.service.org_id, "POST", "/v1/distributions", body)
            async with gate:
                await client.create_distributions(body, idempotency_key=key)

        await client.create_distributions(  # warm the connection and the token
            [
                {
                    "name": "warm",
                    "vehicle": "veh_demo1",
                    "external_reference": f"{prefix}-warm",
                    "distribution_date": "2027-01-15T09:00:00+00:00",
                    "distribution_timezone": "UTC",
                    "payments": [{"entity": entities[0], "amount": 1, "currency": "USD"}],
                }
            ]
        )
        cpu = time.process_time()
        await asyncio.gather(*(one(i, c) for i, c in enumerate(amounts)))
        return len(amounts), time.process_time() - cpu


def _ingest(
    base_url: str,
    tmp: Path,
    prefix: str,
    entities: list[str],
    amounts: list[list[int]],
    concurrency: int,
    chunk_size: int | None,
) -> tuple[int, float, float]:
    """One ingest on a fresh ledger. Returns (requests, CPU s in execute(), wall s of it)."""
    data_dir = tmp / prefix
    (data_dir / "inbox").mkdir(parents=True)
    _write_drop(data_dir / "inbox", prefix, entities, amounts)
    measured: dict[str, float] = {}

    async def timed(*args: Any, **kwargs: Any) -> Any:
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            return await execute(*args, chunk_size=chunk_size, **kwargs)
        finally:
            measured["cpu"] = time.process_time() - cpu
            measured["wall"] = time.perf_counter() - wall

    original = ingest_module.execute
    ingest_module.execute = functools.update_wrapper(timed, execute)  # type: ignore[assignment]
    try:
        result = ingest_module.ingest(
            _settings(base_url, data_dir, concurrency),
            settle_s=0,
            batch_size=1,
            around_submit=frozen_gc,  # as `fundpipe ingest` runs it
        )
    finally:
        ingest_module.execute = original
    states = {f.state for f in result.files}
    assert states == {"processed"}, f"{prefix}: files ended {states}"
    assert result.submit is not None
    assert result.submit.complete
    assert len(result.submit.created) == len(amounts), len(result.submit.created)
    return result.submit.requests_sent, measured["cpu"], measured["wall"]


def main(argv: list[str] | None = None) -> int:
    """Run the variants side by side and print the table and the target line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--distributions", type=int, default=1000)
    parser.add_argument("--payments", type=int, default=5, help="payments per distribution")
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args(argv)
    logging.getLogger("fundpipe").setLevel(logging.ERROR)
    amounts = _amounts(args.distributions, args.payments)
    default_chunk = 8 * args.concurrency
    ctx = multiprocessing.get_context("spawn")
    queue, stop = ctx.Queue(), ctx.Event()
    proc = ctx.Process(target=_serve, args=(queue, stop), daemon=True)
    proc.start()
    rows: list[tuple[str, int, float, float | None]] = []
    try:
        base_url = queue.get(timeout=60)
        with tempfile.TemporaryDirectory() as tmp_name, httpx.Client(base_url=base_url) as control:
            tmp = Path(tmp_name)
            control.put(
                "/_sandbox/settings",
                json={"rate_limit_requests": 1_000_000, "rate_limit_window_s": 1},
            ).raise_for_status()
            settings = _settings(base_url, tmp / "client", args.concurrency)
            entities = asyncio.run(_create_entities(settings, args.payments))
            n, cpu = asyncio.run(_client_loop(settings, "LB-LOOP", entities, amounts))
            rows.append(("client loop, no ledger (baseline)", n, cpu, None))
            for label, prefix, chunk in (
                ("ingest, chunk 1 (per-request commits)", "LB-C1", 1),
                (f"ingest, chunk {default_chunk} (default)", "LB-CD", None),
            ):
                n, cpu, wall = _ingest(
                    base_url, tmp, prefix, entities, amounts, args.concurrency, chunk
                )
                rows.append((label, n, cpu, wall))
    finally:
        stop.set()
        proc.join(timeout=15)
        if proc.is_alive():
            proc.terminate()
    base_ms = rows[0][2] * 1000 / rows[0][1]
    print(
        f"drop: {args.distributions} distributions x {args.payments} payments, one distribution "
        f"per create; concurrency {args.concurrency}; sandbox on loopback, no added latency"
    )
    print(f"{'variant':<40} {'requests':>8} {'CPU s':>7} {'ms/req':>7} {'× loop':>7} {'wall s':>7}")
    for label, n, cpu, wall in rows:
        ms = cpu * 1000 / n
        wall_text = "" if wall is None else f"{wall:.1f}"
        print(f"{label:<40} {n:>8} {cpu:>7.2f} {ms:>7.2f} {ms / base_ms:>7.2f} {wall_text:>7}")
    print(f"load average {psutil.getloadavg()[0]:.1f} on {psutil.cpu_count()} cores")
    default_ms = rows[-1][2] * 1000 / rows[-1][1]
    print(
        targets.ratio(
            "ledger_cpu_per_request",
            default_ms,
            base_ms,
            GOAL_RATIO,
            against="the client loop without a ledger",
            unit=" ms",
            note=f"ingest at chunk {default_chunk}",
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

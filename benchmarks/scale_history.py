"""Benchmark: a night's requests with a long history behind it (issue 14's history scenario).

    python benchmarks/scale_history.py [--history 100000] [--new 1000] [--rate 1000]

Through the CLI and the sandbox's HTTP routes only (the harness is `benchmarks/scale.py`'s):

1. `POST /_sandbox/history`: H executed distributions (one disbursed payment each, the demo
   entities in turn) seeded in bulk on veh_demo1 — the service's past;
2. catch-up: `fundpipe sync` + `fundpipe reconcile` once, so the warehouse knows that past
   (timed and counted: this is the baseline a night is compared with);
3. the night: a drop of N new distributions (5 payments each, to ent_demo1..5, three vehicles)
   through `fundpipe ingest`, `fundpipe sync`, `fundpipe reconcile`.

Requests are counted by the sandbox (`GET /_sandbox/requests`, 429s included). Target: the
night's requests ≤ N/100 + open + C, where N/100 is the create requests of the new
distributions, open the distributions not yet final at the service when the night starts (0
here: the whole history is executed) and C = 40, the night's fixed cost: sign-in, vehicles and
their accounts, the entity and contact lookups of ingest and sync, and the sync's read-back of
the new distributions (N/100 pages). Also printed: the night against the catch-up (requests and
seconds), the rate-limit floor and the peak RSS per phase.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import scale
import targets

CONSTANT = 40
PAYMENTS_PER_NEW = 5


def main() -> None:
    """Seed the history, catch up, run the night; print the table and the target line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--history", type=int, default=100_000, help="executed distributions")
    parser.add_argument("--new", type=int, default=1000, help="new distributions of the night")
    parser.add_argument("--rate", type=int, default=1000, help="R, requests/s (both sides)")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="bench-history-") as tmp,
        scale.sandbox_in(Path(tmp)) as sandbox,
    ):
        work = Path(tmp)
        sandbox.reset(args.rate)
        started = time.perf_counter()
        seeded = sandbox.control(
            "POST",
            "/_sandbox/history",
            {"vehicle": "veh_demo1", "distributions": args.history, "interval_s": 600},
        )
        seed_s = time.perf_counter() - started
        env = scale.cli_env(sandbox.base_url, args.rate)
        data = ["--data-dir", str(work / "data")]
        catch_up = [
            scale.run_phase("catch-up sync", ["sync", *data], env, sandbox),
            scale.run_phase("catch-up reconcile", ["reconcile", *data], env, sandbox),
        ]
        drop = work / "night.csv"
        entities = [f"ent_demo{k}" for k in range(1, PAYMENTS_PER_NEW + 1)]
        payments = scale.write_distributions(drop, args.new, entities, "NIGHT-", PAYMENTS_PER_NEW)
        night = scale.night("night", [drop], work / "data", env, sandbox)

    print(
        f"history: {seeded['distributions']:,} executed distributions "
        f"({seeded['payments']:,} payments) seeded in {seed_s:.1f} s; the night: {args.new:,} new "
        f"distributions ({payments:,} payments), R = {args.rate}"
    )
    print(
        f"{'phase':<20} {'seconds':>8} {'requests':>9} {'floor s':>8} {'CPU s':>7} "
        f"{'CPU ms/req':>10} {'peak RSS MB':>12} {'sandbox CPU s':>14}  top operations"
    )
    for phase in catch_up + night:
        top = sorted(phase.by_operation.items(), key=lambda kv: -kv[1])[:3]
        per_request = f"{phase.cpu_s / phase.requests * 1000:.2f}" if phase.requests else "-"
        print(
            f"{phase.name:<20} {phase.seconds:>8.1f} {phase.requests:>9,} "
            f"{phase.requests / args.rate:>8.1f} {phase.cpu_s:>7.1f} "
            f"{per_request:>10} {phase.peak_rss_mb:>12.0f} "
            f"{phase.sandbox_cpu_s:>14.1f}  {', '.join(f'{k} {v}' for k, v in top)}"
        )
    ok = len(night) == 3 and all(p.exit_code == 0 for p in catch_up + night)
    requests = sum(p.requests for p in night)
    seconds = sum(p.seconds for p in night)
    caught = sum(p.requests for p in catch_up)
    caught_s = sum(p.seconds for p in catch_up)
    opened = 0  # every history distribution is executed
    goal = args.new / 100 + opened + CONSTANT
    print(
        f"the night vs the catch-up: {requests:,} vs {caught:,} requests "
        f"({requests / max(caught, 1):.2f}×), {seconds:.1f} vs {caught_s:.1f} s "
        f"({seconds / max(caught_s, 1e-9):.2f}×)"
    )
    print(
        targets.count(
            "history_night_requests",
            requests if ok else float("inf"),
            goal,
            how=f"{args.new:,} new / 100 + {opened} open + {CONSTANT}; {args.history:,} "
            "distributions of history",
        )
    )


if __name__ == "__main__":
    main()

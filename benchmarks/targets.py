"""The `target …` lines every benchmark ends with: a ratio to a baseline measured in the same run.

A target is never an absolute time: absolute figures move with the machine (and with the other
work on a shared one), a ratio to a baseline measured in the same run on the same machine does
not, or far less. Each line prints the ratio, both figures and the goal:

    target client_cpu_per_request: 1.42× bare httpx (1.87 ms vs 1.32 ms) vs ≤ 1.5× — met
"""

from __future__ import annotations

import math


def ratio(
    name: str,
    measured: float,
    baseline: float,
    goal: float,
    *,
    against: str,
    unit: str = "",
    spec: str = ".2f",
    higher_is_better: bool = False,
    note: str = "",
) -> str:
    """`target NAME: R× AGAINST (MEASURED vs BASELINE) vs ≤ GOAL× — met|short`."""
    value = measured / baseline if baseline else math.inf
    met = value >= goal if higher_is_better else value <= goal
    sign = "≥" if higher_is_better else "≤"
    extra = f"; {note}" if note else ""
    return (
        f"target {name}: {value:.2f}× {against} ({measured:{spec}}{unit} vs "
        f"{baseline:{spec}}{unit}{extra}) vs {sign} {goal:g}× — {'met' if met else 'short'}"
    )


def count(name: str, measured: float, goal: float, *, how: str) -> str:
    """`target NAME: MEASURED vs ≤ GOAL (HOW) — met|short`: a count bounded by the work's size."""
    met = measured <= goal
    return f"target {name}: {measured:,.0f} vs ≤ {goal:,.0f} ({how}) — {'met' if met else 'short'}"

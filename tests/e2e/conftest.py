"""How `make test` runs the end-to-end tests: two xdist workers, two groups.

The tests that start Prefect servers, workers and nights compete for the CPU, and a loaded
machine slows the latencies some of them assert (an inbox run within 10 s of a drop): they run
one after another on one worker (group `serial`), as before. The late-night alert test spends
most of its minutes waiting for a wall-clock deadline a minute or two ahead, so it runs on the
other worker at the same time (group `waits`), instead of adding its wait to the suite's.
"""

from __future__ import annotations

import pytest

#: Tests that mostly wait for the wall clock, not the CPU.
WAITING = ("test_deadline_alert.py",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put each end-to-end test in its xdist group (used with `--dist loadgroup`)."""
    for item in items:
        if item.path.parent.name != "e2e":
            continue
        group = "waits" if item.path.name in WAITING else "serial"
        item.add_marker(pytest.mark.xdist_group(group))

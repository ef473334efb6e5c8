"""How `make test` runs the end-to-end tests: a file at a time on each of two xdist workers,
the longest files first, and the late-night alert test beside lint, mypy and the unit suite.

`make test` runs this directory with `-n 2 --dist loadfile --no-loadscope-reorder`: each file
stays on one worker (its module fixtures — a built wheel, a night, a Prefect test harness — are
made once), and the files are handed out in the order below, longest first, so neither worker
is left with a long file while the other has nothing to do.

`test_deadline_alert.py` and `test_stopped_serve.py` spend most of their three and five minutes
waiting for a wall-clock deadline: `tests/make_test.sh` starts them side by side, in the
background, before lint, mypy and the unit suite (their servers need little CPU while they wait,
and the alert's 2-minute window is generous; the first passed on this machine at a load average
of 8), and leaves them out of this directory's run.
"""

from __future__ import annotations

import pytest

#: Seconds each file took on the 2-core CI machine (`--durations`), to hand out the longest
#: first. A file not listed goes last: add it here once it takes more than a few seconds.
SECONDS = {
    "test_prefect_scheduling.py": 145,
    "test_on_call_alerts.py": 110,
    "test_wheel.py": 70,
    "test_postgres_server.py": 65,
    "test_every_organization.py": 65,
    "test_nightly_flow.py": 60,
    "test_documented_night.py": 60,
    "test_readme_examples.py": 75,
    "test_two_workers.py": 50,
    "test_serve_sigterm.py": 45,
    "test_secret_block.py": 10,
    "test_deadline_alert.py": 180,
    "test_stopped_serve.py": 300,
}


@pytest.hookimpl(trylast=True)  # after tests/conftest.py's order, within its places
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the end-to-end files longest first, each file's tests together and in their order
    (in the places the end-to-end tests already held, when other tests were collected too)."""
    places = [i for i, item in enumerate(items) if item.path.parent.name == "e2e"]
    ordered = sorted((items[i] for i in places), key=lambda item: -SECONDS.get(item.path.name, 0))
    for place, item in zip(places, ordered, strict=True):
        items[place] = item

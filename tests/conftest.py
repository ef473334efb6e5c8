"""Suite-wide checks: every test pytest collects also runs.

Under pytest-xdist, items that share a node id are silently collapsed into one (schemathesis
once lost 23 of its 24 operations that way), and nothing else would notice. This plugin counts
the tests collected and the tests that reported an outcome, and fails the session when they
differ or when two items share a node id.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest


class EveryTestRuns:
    """Compares the tests collected with the tests that ran (on the xdist controller too)."""

    def __init__(self) -> None:
        """Nothing collected or run yet."""
        self.collected: list[str] | None = None
        self.ran = 0

    def _record_collection(self, ids: list[str]) -> None:
        if self.collected is None:
            self.collected = list(ids)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Without xdist: the selected items."""
        if not session.config.pluginmanager.hasplugin("dsession"):
            self._record_collection([item.nodeid for item in session.items])

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """With xdist: what a worker collected (every worker collects the same items)."""
        self._record_collection(ids)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """One outcome per test: its call, or its setup when that failed or skipped."""
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.ran += 1

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Fail a session that would otherwise pass while some collected test never ran."""
        config = session.config
        if self.collected is None or config.option.collectonly or exitstatus != 0:
            return
        if config.option.maxfail or session.shouldstop:
            return
        duplicates = [nodeid for nodeid, n in Counter(self.collected).items() if n > 1]
        problems = []
        if duplicates:
            problems.append(
                f"{len(duplicates)} node id(s) shared by several items: {duplicates[:3]}"
            )
        if self.ran != len(self.collected):
            problems.append(f"{len(self.collected)} tests collected but {self.ran} ran")
        if problems:
            reporter = config.pluginmanager.get_plugin("terminalreporter")
            for problem in problems:
                if reporter is not None:
                    reporter.write_line(
                        f"ERROR: every collected test must run: {problem}", red=True
                    )
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give every item a node id of its own.

    schemathesis 4 on pytest 9 names its items `test[GET /v1/…]` but leaves every one with the
    bare function's node id; xdist then schedules only one of them. The node id is the parent's
    plus the item's name, as pytest builds it for its own parametrized items.
    """
    from _pytest.nodes import coerce_node_id  # pytest 9's node ids; no public setter

    for item in items:
        if isinstance(item, pytest.Function) and not item.nodeid.endswith(item.name):
            parent, _, _ = item.nodeid.rpartition("::")
            item._id = coerce_node_id(f"{parent}::{item.name}")


def pytest_configure(config: pytest.Config) -> None:
    """Install the check on the controller (xdist workers only report to it)."""
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(EveryTestRuns(), "every-test-runs")

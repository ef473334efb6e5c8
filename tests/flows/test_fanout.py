"""The fan-out's rules: one limit per service host, the rate each organization gets, and a
cross-organization summary that adds up."""

from __future__ import annotations

from pathlib import Path

import pytest

from fundpipe.app.prefect.fanout import limit_name, shared_rate
from fundpipe.app.prefect.nightsummary import cross_markdown, cross_summary, org_row
from fundpipe.config import Organization, Settings


def _settings(**values: object) -> Settings:
    return Settings(data_dir=Path("data"), _env_file=None, **values)  # type: ignore[call-arg]


def test_one_limit_per_service_host_whatever_its_port_or_path() -> None:
    a = limit_name(_settings(base_url="https://API.example.com:8443/v1"))
    b = limit_name(_settings(base_url="https://api.example.com"))
    assert a == b == "fundpipe-service-api-example-com"
    assert limit_name(_settings(base_url="https://eu.example.com")) != a


@pytest.mark.parametrize(
    ("host_rate", "limit", "orgs", "expected"),
    [
        (None, 2, 4, 9.0),  # the service limits each client and organization: no sharing
        (9.0, 2, 4, 4.5),  # two talk at once: half the host's rate each
        (9.0, 4, 3, 3.0),  # three organizations, all at once: a third each
        (20.0, 2, 1, 9.0),  # never above the organization's own rate
    ],
)
def test_the_host_rate_is_shared_by_the_organizations_talking_at_once(
    host_rate: float | None, limit: int, orgs: int, expected: float
) -> None:
    settings = _settings(
        rate_limit_per_s=9.0, host_rate_limit_per_s=host_rate, org_concurrency=limit
    )
    shared = shared_rate(settings, orgs)
    assert shared.rate_limit_per_s == pytest.approx(expected)
    at_once = min(limit, orgs)
    if host_rate is not None:
        assert shared.rate_limit_per_s * at_once <= host_rate + 1e-9


def _child(files: list[tuple[str, int, int]], exceptions: int) -> dict[str, object]:
    return {
        "files": [
            {"file": f"{n}.csv", "state": state, "distributions": d, "total_cents": cents}
            for n, (state, d, cents) in enumerate(files)
        ],
        "open_exceptions": exceptions,
        "rejected_files": [{"file": "bad.csv"}] if any(f[0] == "rejected" for f in files) else [],
        "exit_code": 1 if any(f[0] == "rejected" for f in files) else 0,
    }


def test_the_cross_organization_summary_adds_up() -> None:
    from prefect.states import Completed, Failed

    a = org_row(
        Organization(id="org_a", name="Alder"),
        Completed(message="ok"),
        _child([("processed", 2, 150_000), ("rejected", 0, 99)], 1),
    )
    a["run"] = "http://127.0.0.1:4200/runs/flow-run/1111"
    b = org_row(Organization(id="org_b"), Failed(message="the service failed"), None)
    b["run"] = "2222"
    summary = cross_summary([a, b], "2026-11-30")
    totals = summary["totals"]
    assert (a["total_cents"], a["total"], a["rejected"]) == (150_000, "$1,500.00", 1)
    assert totals == {
        "organizations": 2,
        "failed": 1,
        "files": 2,
        "rejected": 1,
        "distributions": 2,
        "total_cents": 150_000,
        "total": "$1,500.00",
        "open_exceptions": 1,
    }
    assert summary["rejected_files"] == [{"file": "bad.csv", "organization": "org_a"}]
    text = cross_markdown(summary)
    assert "| org_a | Completed | 2 | 1 | 2 | $1,500.00 | 1 | [1111](http://127.0.0.1:4200" in text
    assert "| org_b | Failed | 0 | 0 | 0 | $0.00 | 0 | `2222` |" in text
    assert "- org_b (Failed): the service failed" in text

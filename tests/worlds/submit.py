"""Builders shared by the submission tests: canonical frames, sheets on disk, service states."""

from __future__ import annotations

import asyncio
import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pandas as pd

from fundpipe.client import FundClient
from fundpipe.config import Settings
from fundpipe.plan import FileInput, ServiceState

DEMO_STATE = ServiceState(
    org_id="org_demo",
    vehicles=frozenset({"veh_demo1", "veh_demo2", "veh_demo3"}),
    entities_by_ref={f"DEMO-E{i}": f"ent_demo{i}" for i in range(1, 6)},
    entity_ids=frozenset(f"ent_demo{i}" for i in range(1, 6)),
    contacts_by_email={f"investor{i}@example.com": f"cnt_demo{i}" for i in range(1, 6)},
    contact_ids=frozenset(f"cnt_demo{i}" for i in range(1, 6)),
    available_cents={"veh_demo1": 500_000_000, "veh_demo2": 250_000_000, "veh_demo3": 75_000_000},
)


def payment_rows(
    ref: str,
    amounts: Sequence[int],
    *,
    vehicle: str = "veh_demo1",
    name: str | None = None,
    entities: Sequence[str] | None = None,
    date: str = "2026-12-15T09:00:00-05:00",
    tz: str = "America/New_York",
    notify: str | None = None,
    first_row: int = 2,
) -> list[dict[str, Any]]:
    """Canonical payment rows (architecture.md) of one distribution."""
    entities = entities or [f"ent_demo{(i % 5) + 1}" for i in range(len(amounts))]
    return [
        {
            "source_file": "sheet.csv",
            "sheet": None,
            "row": first_row + i,
            "distribution_name": name or f"Distribution {ref}",
            "vehicle": vehicle,
            "external_reference": ref,
            "distribution_date": date,
            "distribution_timezone": tz,
            "entity": entity,
            "entity_is_ref": not entity.startswith("ent_"),
            "amount_cents": amount,
            "currency": "USD",
            "distribution_date_override": pd.NA,
            "notify": notify if notify is not None else pd.NA,
        }
        for i, (amount, entity) in enumerate(zip(amounts, entities, strict=True))
    ]


def file_input(file_hash: str, rows: list[dict[str, Any]], **frames: pd.DataFrame) -> FileInput:
    """A validated file made of canonical rows (and optional roster frames)."""
    return FileInput(
        file_hash=file_hash,
        source_file=f"{file_hash}.csv",
        distributions=pd.DataFrame(rows),
        **frames,
    )


SHEET_HEADER = [
    "Distribution Name",
    "Vehicle",
    "External Reference",
    "Payment Date",
    "Timezone",
    "Entity ID",
    "Amount ($)",
    "Currency",
]


def cents_text(cents: int) -> str:
    """Cents as the sheet's money text (``1,234.56``)."""
    return f"{cents // 100:,}.{cents % 100:02d}"


def write_sheet(
    path: Path,
    distributions: Sequence[tuple[str, str, Sequence[int]]],
    *,
    entities: Sequence[str] = ("ent_demo1", "ent_demo2", "ent_demo3", "ent_demo4", "ent_demo5"),
    date: str = "2026-12-15 09:00",
) -> dict[str, list[int]]:
    """Write a distribution CSV: (external_reference, vehicle, amounts) per distribution.

    Returns the amounts per reference, the truth a test checks the service against.
    """
    truth: dict[str, list[int]] = {}
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(SHEET_HEADER)
        for ref, vehicle, amounts in distributions:
            truth[ref] = list(amounts)
            for i, cents in enumerate(amounts):
                writer.writerow(
                    [
                        f"Distribution {ref}",
                        vehicle,
                        ref,
                        date,
                        "America/New_York",
                        entities[i % len(entities)],
                        cents_text(cents),
                        "USD",
                    ]
                )
    return truth


@dataclass
class World:
    """A demo-seeded sandbox (in process) and a data directory pointed at it."""

    settings: Settings
    transport: httpx.ASGITransport

    @property
    def data_dir(self) -> Path:
        return self.settings.local.data_dir

    @property
    def inbox(self) -> Path:
        return self.data_dir / "inbox"

    def control(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """Call a `/_sandbox/` control route."""

        async def call() -> Any:
            async with httpx.AsyncClient(
                transport=self.transport, base_url="http://sandbox.test"
            ) as http:
                response = await http.request(method, f"/_sandbox/{path}", json=body)
                response.raise_for_status()
                return response.json()

        return asyncio.run(call())

    def distributions(self) -> list[Any]:
        """Every distribution the service holds, with all its payments."""

        async def pull() -> list[Any]:
            async with FundClient(
                self.settings.client_config(), transport=self.transport
            ) as client:
                out = []
                async for d in client.list_distributions():
                    payments = [p async for p in client.list_distribution_payments(d.id)]
                    out.append((d, payments))
                return out

        return asyncio.run(pull())

    def amounts(self) -> dict[str, list[int]]:
        """External reference → sorted payment amounts; fails on a duplicate reference."""
        out: dict[str, list[int]] = {}
        for d, payments in self.distributions():
            assert d.external_reference not in out, f"duplicate {d.external_reference}"
            out[d.external_reference] = sorted(p.amount for p in payments)
        return out

    def references(self) -> dict[str, str]:
        """External reference → distribution id, from the list alone (no payment is fetched:
        cheap on a long history); fails on a duplicate reference."""

        async def pull() -> dict[str, str]:
            async with FundClient(
                self.settings.client_config(), transport=self.transport
            ) as client:
                out: dict[str, str] = {}
                async for d in client.list_distributions():
                    assert d.external_reference not in out, f"duplicate {d.external_reference}"
                    out[d.external_reference] = d.id
                return out

        return asyncio.run(pull())

    def amounts_of(self, reference: str) -> list[int]:
        """The sorted payment amounts of the one distribution with `reference` (fails when a
        reference is on two distributions, or on none)."""
        distribution = self.references()[reference]

        async def pull() -> list[int]:
            async with FundClient(
                self.settings.client_config(), transport=self.transport
            ) as client:
                return sorted(
                    [p.amount async for p in client.list_distribution_payments(distribution)]
                )

        return asyncio.run(pull())

    def entities(self) -> list[Any]:
        async def pull() -> list[Any]:
            async with FundClient(
                self.settings.client_config(), transport=self.transport
            ) as client:
                return [e async for e in client.list_entities()]

        return asyncio.run(pull())


def sandbox_world(data_dir: Path, **config: Any) -> World:
    """A demo-seeded in-process sandbox built with `config` (e.g. ``strict_interface=True``)
    and a data directory with an empty inbox pointed at it."""
    from fundpipe.sandbox import SandboxConfig, create_app

    app = create_app(SandboxConfig(rate_limit_requests=10_000, rate_limit_window_s=1, **config))
    settings = Settings(
        _env_file=None, local={"data_dir": data_dir}, http={"rate_limit_per_s": 1000.0}
    ).with_service("http://sandbox.test")
    (data_dir / "inbox").mkdir(parents=True, exist_ok=True)
    return World(settings=settings, transport=httpx.ASGITransport(app=app))

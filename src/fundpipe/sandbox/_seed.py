"""Seeds: `demo` (the demo organization of docs/architecture.md) and `empty`; bulk helpers.

`demo` with `demo_orgs` > 1 (off by default) adds further demo organizations `org_demob`,
`org_democ`, …: each with two vehicles (`veh_demob1`, `veh_demob2`; depository and brokerage
accounts `fa_demob1dep`, `fa_demob1brk`, …), three investors (`ent_demob1`… with payment
instructions `pmi_demob1`… and contacts `cnt_demob1`…, references `DEMO-B-E1`, `DEMO-B-C1`…),
and the demo clients act for every one of them (so requests must name one in
`X-Organization-Id`).
"""

from __future__ import annotations

import sqlite3

from fundpipe.sandbox._auth import EVERY_SCOPE, READ_SCOPES, upsert_client
from fundpipe.sandbox._store import new_id, set_meta

BANK_NAME = "Sandbox Partner Bank, N.A."

# (id suffix, name, depository total, depository end of last month, brokerage total, brokerage eolm)
# Nothing has moved through the depository accounts yet this month (their month-end equals their
# total), so a fresh demo reconciles with no unexplained balance; brokerage accounts moved with
# the market, which is not a payment matter.
_VEHICLES = (
    ("1", "Demo Growth Fund I", 500_000_000, 500_000_000, 1_250_000_000, 1_198_400_000),
    ("2", "Demo Income Fund II", 250_000_000, 250_000_000, 640_000_000, 633_750_000),
    ("3", "Demo Real Assets III", 75_000_000, 75_000_000, 190_000_000, 186_200_000),
)
_ENTITIES = (
    ("Avery Family Trust", "trust", "LP"),
    ("Brightwater Capital LLC", "llc", "LP"),
    ("Carmen Ortiz", "individual", "LP"),
    ("Dunmore Foundation", "foundation", "LP"),
    ("Eastgate Pension Plan", "employee_benefit_plan", "LP"),
)
_CONTACTS = ("Alex Avery", "Bea Brightwater", "Carmen Ortiz", "Dana Dunmore", "Eli Eastgate")
# Further demo organizations: (vehicle name, depository cents, brokerage cents) and investors.
_MORE_VEHICLES = (
    ("Credit Fund I", 120_000_000, 300_000_000),
    ("Venture Fund II", 40_000_000, 95_000_000),
)
_MORE_INVESTORS = (
    ("Foxglove Holdings LP", "partnership", "Felix Fox"),
    ("Greyfield Endowment", "endowment", "Gina Grey"),
    ("Harbor Point Trust", "trust", "Hal Harbor"),
)


def add_organization(conn: sqlite3.Connection, org_id: str, name: str, now_ts: float) -> None:
    """Insert an organization."""
    conn.execute(
        "INSERT INTO organizations (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)",
        (org_id, name, now_ts, now_ts),
    )


def add_vehicle(
    conn: sqlite3.Connection,
    org_id: str,
    name: str,
    now_ts: float,
    *,
    vehicle_id: str | None = None,
    depository: tuple[int, int] = (0, 0),
    brokerage: tuple[int, int] = (0, 0),
    account_ids: tuple[str, str] | None = None,
) -> tuple[str, list[str]]:
    """Insert a vehicle with a depository and a brokerage account; returns (veh id, fa ids).

    `depository` / `brokerage` are (total, total_end_of_last_month) in cents; available = total.
    """
    veh = vehicle_id or new_id("veh_")
    conn.execute(
        "INSERT INTO vehicles (id, org, name, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
        (veh, org_id, name, now_ts, now_ts),
    )
    ids = list(account_ids or (new_id("fa_"), new_id("fa_")))
    for fa, kind, (total, eolm), digits in zip(
        ids, ("depository", "brokerage"), (depository, brokerage), ("4821", "9377"), strict=True
    ):
        add_account(
            conn, org_id, veh, fa, f"{name} {kind.title()}", kind, total, eolm, digits, now_ts
        )
    return veh, ids


def add_account(
    conn: sqlite3.Connection,
    org_id: str,
    vehicle_id: str,
    account_id: str,
    name: str,
    kind: str,
    total: int,
    eolm: int,
    last_four: str,
    now_ts: float,
) -> None:
    """Insert one financial account (available = total)."""
    conn.execute(
        "INSERT INTO financial_accounts (id, org, vehicle, name, type, bank_name, last_four, "
        "total, available, total_eolm, currency, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'USD', ?, ?)",
        (
            account_id,
            org_id,
            vehicle_id,
            name,
            kind,
            BANK_NAME,
            last_four,
            total,
            total,
            eolm,
            now_ts,
            now_ts,
        ),
    )


def seed_demo(conn: sqlite3.Connection, now_ts: float, organizations: int = 1) -> None:
    """The demo organization, its vehicles, accounts, entities, contacts and clients.

    `organizations` > 1 adds that many demo organizations in all (see the module docstring).
    """
    add_organization(conn, "org_demo", "Demo Fund Administration", now_ts)
    for suffix, vehicle_name, dep, dep_eolm, brk, brk_eolm in _VEHICLES:
        add_vehicle(
            conn,
            "org_demo",
            vehicle_name,
            now_ts,
            vehicle_id=f"veh_demo{suffix}",
            depository=(dep, dep_eolm),
            brokerage=(brk, brk_eolm),
            account_ids=(f"fa_demo{suffix}dep", f"fa_demo{suffix}brk"),
        )
    for n, (name, kind, external_type) in enumerate(_ENTITIES, start=1):
        conn.execute(
            "INSERT INTO entities (id, org, name, type, external_type, external_reference, "
            "created_at, updated_at) VALUES (?, 'org_demo', ?, ?, ?, ?, ?, ?)",
            (f"ent_demo{n}", name, kind, external_type, f"DEMO-E{n}", now_ts, now_ts),
        )
        conn.execute(
            "INSERT INTO payment_instructions (id, org, entity, type, beneficiary_name, bank_name, "
            "routing_number, last_four, branch_code, external_reference, created_at) "
            "VALUES (?, 'org_demo', ?, 'ach', ?, 'First Example Bank', '021000021', ?, NULL, ?, ?)",
            (f"pmi_demo{n}", f"ent_demo{n}", name, f"{1000 + n * 111}", f"DEMO-PMI{n}", now_ts),
        )
    for n, name in enumerate(_CONTACTS, start=1):
        conn.execute(
            "INSERT INTO contacts (id, org, name, email, external_reference, created_at, updated_at) "
            "VALUES (?, 'org_demo', ?, ?, ?, ?, ?)",
            (f"cnt_demo{n}", name, f"investor{n}@example.com", f"DEMO-C{n}", now_ts, now_ts),
        )
        conn.execute(
            "INSERT INTO entity_contacts (entity, contact) VALUES (?, ?)",
            (f"ent_demo{n}", f"cnt_demo{n}"),
        )
    orgs = ["org_demo"]
    for letter in "bcdefghijklmnopqrstuvwxyz"[: organizations - 1]:
        orgs.append(_seed_more(conn, letter, now_ts))
    upsert_client(conn, "demo-client", "demo-secret", EVERY_SCOPE, orgs)
    upsert_client(conn, "demo-reader", "reader-secret", READ_SCOPES, orgs)


def _seed_more(conn: sqlite3.Connection, letter: str, now_ts: float) -> str:
    """One further demo organization (`org_demo<letter>`); returns its id."""
    org = f"org_demo{letter}"
    tag = letter.upper()
    add_organization(conn, org, f"Demo Fund Administration {tag}", now_ts)
    for n, (name, dep, brk) in enumerate(_MORE_VEHICLES, start=1):
        add_vehicle(
            conn,
            org,
            f"Demo {tag} {name}",
            now_ts,
            vehicle_id=f"veh_demo{letter}{n}",
            depository=(dep, dep),
            brokerage=(brk, brk),
            account_ids=(f"fa_demo{letter}{n}dep", f"fa_demo{letter}{n}brk"),
        )
    for n, (name, kind, person) in enumerate(_MORE_INVESTORS, start=1):
        ent, cnt = f"ent_demo{letter}{n}", f"cnt_demo{letter}{n}"
        conn.execute(
            "INSERT INTO entities (id, org, name, type, external_type, external_reference, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, 'LP', ?, ?, ?)",
            (ent, org, name, kind, f"DEMO-{tag}-E{n}", now_ts, now_ts),
        )
        conn.execute(
            "INSERT INTO payment_instructions (id, org, entity, type, beneficiary_name, bank_name, "
            "routing_number, last_four, branch_code, external_reference, created_at) "
            "VALUES (?, ?, ?, 'ach', ?, 'First Example Bank', '021000021', ?, NULL, ?, ?)",
            (
                f"pmi_demo{letter}{n}",
                org,
                ent,
                name,
                f"{2000 + n * 111}",
                f"DEMO-{tag}-PMI{n}",
                now_ts,
            ),
        )
        conn.execute(
            "INSERT INTO contacts (id, org, name, email, external_reference, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                cnt,
                org,
                person,
                f"investor{n}.{letter}@example.com",
                f"DEMO-{tag}-C{n}",
                now_ts,
                now_ts,
            ),
        )
        conn.execute("INSERT INTO entity_contacts (entity, contact) VALUES (?, ?)", (ent, cnt))
    return org


def apply_seed(conn: sqlite3.Connection, seed: str, now_ts: float, demo_orgs: int = 1) -> None:
    """Fill an empty database with `seed` and remember that it was seeded.

    `demo_orgs`: how many demo organizations the `demo` seed creates (ignored by `empty`).
    """
    if seed == "demo":
        seed_demo(conn, now_ts, demo_orgs)
    elif seed != "empty":
        raise ValueError(f"unknown seed {seed!r}")
    set_meta(conn, "seed", seed)


def bulk_accounts(
    conn: sqlite3.Connection, org_id: str, vehicles: int, per_vehicle: int, now_ts: float
) -> tuple[list[str], int]:
    """Many vehicles with many accounts each (for benchmarks); returns (vehicle ids, count)."""
    vehicle_rows = []
    account_rows = []
    vehicle_ids: list[str] = []
    for v in range(vehicles):
        veh = new_id("veh_")
        vehicle_ids.append(veh)
        vehicle_rows.append((veh, org_id, f"Bulk Vehicle {v + 1}", now_ts, now_ts))
        for a in range(per_vehicle):
            kind = "depository" if a % 2 == 0 else "brokerage"
            total = 1_000_000 * (a + 1)
            account_rows.append(
                (
                    new_id("fa_"),
                    org_id,
                    veh,
                    f"Bulk Account {v + 1}.{a + 1}",
                    kind,
                    BANK_NAME,
                    f"{(v * 31 + a) % 10000:04d}",
                    total,
                    total,
                    total,
                    now_ts,
                    now_ts,
                )
            )
    conn.executemany(
        "INSERT INTO vehicles (id, org, name, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
        vehicle_rows,
    )
    conn.executemany(
        "INSERT INTO financial_accounts (id, org, vehicle, name, type, bank_name, last_four, "
        "total, available, total_eolm, currency, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'USD', ?, ?)",
        account_rows,
    )
    return vehicle_ids, len(account_rows)

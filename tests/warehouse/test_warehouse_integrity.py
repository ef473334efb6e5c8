"""A damaged DuckDB file and a full disk are the machine's faults, told with the file's name."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import duckdb
import pytest
import xlsxwriter.exceptions

from fundpipe.errors import (
    DamagedFileError,
    DiskFullError,
    ExitCode,
    InternalError,
    as_fundpipe_error,
)
from fundpipe.submit.ledger import open_ledger
from fundpipe.warehouse.file import Warehouse
from fundpipe.warehouse.integrity import damage_in
from worlds.machine import damage, duckdb_no_space, no_space
from worlds.warehouse import seed_known_world


@pytest.fixture(scope="module")
def known_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The known world in a warehouse file, built once for the module."""
    wh = Warehouse(tmp_path_factory.mktemp("known") / "warehouse.duckdb")
    with wh.write() as con:
        seed_known_world(con)
    return wh.path


@pytest.fixture
def org_warehouse(known_file: Path, tmp_path: Path) -> Warehouse:
    """A copy of the known world as an organization's warehouse, `data/orgs/org_a/…`."""
    path = tmp_path / "data" / "orgs" / "org_a" / "warehouse.duckdb"
    path.parent.mkdir(parents=True)
    shutil.copyfile(known_file, path)
    return Warehouse(path, lock_timeout_s=5)


def test_a_whole_file_has_no_damage(org_warehouse: Warehouse) -> None:
    with org_warehouse.read() as con:
        assert damage_in(con) is None


def test_a_damaged_warehouse_is_refused_before_anything_is_written(
    org_warehouse: Warehouse,
) -> None:
    problem = damage(org_warehouse.path, "vehicles")
    damaged = org_warehouse.path.read_bytes()
    with pytest.raises(DamagedFileError) as raised, org_warehouse.write() as con:
        con.execute("INSERT INTO syncs (sync_id) VALUES ('never')")
    assert str(raised.value) == (
        f"the warehouse {org_warehouse.path} is damaged ({problem}); fundpipe writes nothing "
        "to it until it is restored from the organization's record: "
        "fundpipe restore --org org_a"
    )
    assert raised.value.exit_code == ExitCode.MACHINE == 6
    assert org_warehouse.path.read_bytes() == damaged


def test_a_read_that_meets_a_damaged_block_names_the_file(org_warehouse: Warehouse) -> None:
    problem = damage(org_warehouse.path, "vehicles")
    raises = pytest.raises(DamagedFileError, match="restore --org org_a")
    with raises as raised, org_warehouse.read() as con:
        con.execute("SELECT * FROM vehicles").fetchall()
    assert raised.value.path == org_warehouse.path
    assert raised.value.problem == problem


def test_a_damaged_ledger_is_refused_at_open(tmp_path: Path) -> None:
    path = tmp_path / "orgs" / "org_b" / "ledger.duckdb"
    with open_ledger(path) as ledger:
        ledger.record_file("h" * 64, "q4.csv", "processed", rows=3)
    problem = damage(path)
    with pytest.raises(DamagedFileError) as raised, open_ledger(path):
        pass
    assert f"the ledger {path} is damaged ({problem})" in str(raised.value)
    assert "fundpipe restore --org org_b" in str(raised.value)


def test_a_file_that_is_not_a_database_is_damaged(org_warehouse: Warehouse) -> None:
    org_warehouse.path.write_bytes(os.urandom(8192))
    with pytest.raises(DamagedFileError, match="it is not a DuckDB database file"):
        org_warehouse.migrate()


def test_a_cut_off_file_is_damaged(org_warehouse: Warehouse) -> None:
    os.truncate(org_warehouse.path, org_warehouse.path.stat().st_size // 2)
    with pytest.raises(DamagedFileError, match="cut off"), org_warehouse.read() as con:
        damage_in(con)


def test_damage_in_another_attached_file_is_not_blamed_on_the_warehouse(
    org_warehouse: Warehouse, tmp_path: Path
) -> None:
    other = tmp_path / "other.duckdb"
    with duckdb.connect(str(other)) as con:
        con.execute("CREATE TABLE t AS SELECT range AS n, 'x' || range AS s FROM range(200000)")
    damage(other, "t")

    def read_through_the_warehouse() -> None:
        with org_warehouse.write() as con:
            con.execute(f"ATTACH '{other}' AS other (READ_ONLY)")
            con.execute("SELECT bit_xor(hash(t)) FROM other.t AS t").fetchall()

    with pytest.raises(DamagedFileError) as raised:
        read_through_the_warehouse()
    assert "the warehouse" not in str(raised.value)
    assert "a local DuckDB file is damaged" in str(raised.value)


@pytest.mark.parametrize(
    ("raised", "told"),
    [
        # write() names no file: the writer that knows it says it (fundpipe.warehouse.integrity)
        (no_space("/data/reports/x.parquet"), "while writing /data/reports/x.parquet;"),
        (
            xlsxwriter.exceptions.FileCreateError(no_space("/data/r/reconciliation.xlsx")),
            "while writing /data/r/reconciliation.xlsx;",
        ),
        (
            duckdb_no_space(Path("/data/r/funding.parquet")),
            "while writing /data/r/funding.parquet;",
        ),
        (OSError(errno.EDQUOT, "Disk quota exceeded", "/q"), "while writing /q;"),
    ],
)
def test_a_full_disk_anywhere_is_the_machines_fault_naming_the_path(
    raised: BaseException, told: str
) -> None:
    error = as_fundpipe_error(raised)
    assert isinstance(error, DiskFullError)
    assert error.exit_code == ExitCode.MACHINE
    assert "the disk is full" in str(error)
    assert told in str(error)


def test_other_os_errors_are_still_bugs() -> None:
    assert isinstance(as_fundpipe_error(OSError(errno.EIO, "I/O error")), InternalError)
    assert isinstance(as_fundpipe_error(duckdb.Error("Catalog Error: no table x")), InternalError)

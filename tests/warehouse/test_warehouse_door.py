"""One door to DuckDB: every connection and every transaction goes through
`fundpipe.warehouse.connection` (behind `Warehouse` and the ledger), and a file is hashed by one
recipe (`fundpipe.keys`)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from fundpipe.submit.ledger import open_ledger, read_ledger
from fundpipe.warehouse.file import Warehouse

SRC = Path(__file__).resolve().parents[2] / "src" / "fundpipe"
#: The door: the one module that opens DuckDB and writes BEGIN / COMMIT / ROLLBACK.
DOOR = SRC / "warehouse" / "connection.py"
#: The embedded service keeps its state in SQLite (its own transactions); it never imports the
#: pipeline, so it cannot use the pipeline's door.
NOT_DUCKDB = ("sandbox/",)
#: The one chunked SHA-256 of a file or stream.
HASHER = SRC / "keys.py"

_TRANSACTION_WORDS = re.compile(
    r"^\s*(BEGIN|COMMIT|ROLLBACK|ABORT|END\s+TRANSACTION|START\s+TRANSACTION)\b", re.IGNORECASE
)

#: The connection methods that run a statement given as text.
_RUNS_SQL = frozenset({"execute", "executemany", "sql", "query"})


def _python_files() -> list[Path]:
    return [
        path
        for path in sorted(SRC.rglob("*.py"))
        if path != DOOR and not str(path.relative_to(SRC)).startswith(NOT_DUCKDB)
    ]


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(SRC)}:{getattr(node, 'lineno', '?')}"


def test_no_transaction_is_written_by_hand_outside_the_door() -> None:
    found = [
        _where(path, node)
        for path in _python_files()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _RUNS_SQL
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
        and _TRANSACTION_WORDS.match(node.args[0].value)
    ]
    found += [
        f"{path.relative_to(SRC)}:{number}"
        for path in sorted(SRC.rglob("*.sql"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _TRANSACTION_WORDS.match(line)
    ]
    assert found == [], "use Warehouse.transaction() / Ledger.transaction() / transaction(con)"


def test_no_duckdb_connection_is_opened_outside_the_door() -> None:
    found = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "connect"
                and isinstance(node.value, ast.Name)
                and node.value.id == "duckdb"
            ) or (
                isinstance(node, ast.ImportFrom)
                and node.module == "duckdb"
                and any(alias.name == "connect" for alias in node.names)
            ):
                found.append(_where(path, node))
    assert found == [], "open DuckDB through Warehouse, the ledger or warehouse.connection"


def test_a_file_is_hashed_in_chunks_in_one_place() -> None:
    """A chunked read loop (``iter(lambda: ….read(n), b"")``) is keys.stream_hash's alone."""
    found = [
        _where(path, node)
        for path in sorted(SRC.rglob("*.py"))
        if path != HASHER
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "iter"
        and len(node.args) == 2
        and isinstance(node.args[0], ast.Lambda)
    ]
    assert found == [], "hash a file with fundpipe.keys.file_hash / stream_hash"


def test_a_warehouse_transaction_commits_when_its_block_ends(tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse.duckdb")
    with warehouse.transaction() as con:
        con.execute("CREATE TABLE notes (note VARCHAR)")
        con.execute("INSERT INTO notes VALUES ('kept')")
    with warehouse.read() as con:
        assert con.execute("SELECT note FROM notes").fetchall() == [("kept",)]


def test_a_warehouse_transaction_that_raises_keeps_nothing_of_its_block(tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse.duckdb")
    with warehouse.write() as con:
        con.execute("CREATE TABLE notes (note VARCHAR)")

    def note_then_fail() -> None:
        with warehouse.transaction() as con:
            con.execute("INSERT INTO notes VALUES ('lost')")
            raise RuntimeError("half way")

    with pytest.raises(RuntimeError, match="half way"):
        note_then_fail()
    with warehouse.read() as con:
        assert con.execute("SELECT count(*) FROM notes").fetchall() == [(0,)]


def test_peeking_at_a_missing_warehouse_opens_nothing(tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path / "warehouse.duckdb")
    assert warehouse.peek() is None
    assert not warehouse.path.exists()


def test_a_ledger_read_only_is_none_until_one_was_written(tmp_path: Path) -> None:
    path = tmp_path / "ledger.duckdb"
    with read_ledger(path) as ledger:
        assert ledger is None
    with open_ledger(path) as ledger:
        ledger.record_file("abc", "sheet.csv", "processed", rows=1)
    with read_ledger(path) as ledger:
        assert ledger is not None
        assert ledger.file_state("abc") == "processed"


def test_shared_reads_are_one_connection_closed_after_so_a_writer_gets_the_file(
    tmp_path: Path,
) -> None:
    """A desk page's reads share one connection (a cursor each, its variables its own, usable
    from two threads at once) and close it when the page is done: the night can write."""
    import contextvars
    import threading

    from fundpipe.warehouse import shared_reads

    warehouse = Warehouse(tmp_path / "warehouse.duckdb")
    warehouse.migrate()
    with shared_reads():
        with warehouse.read() as one:
            one.execute("SET VARIABLE as_of = DATE '2026-11-30'")
            with warehouse.read() as two:
                assert two.execute("SELECT getvariable('as_of')").fetchone() == (None,)
                assert two.execute("SELECT current_setting('TimeZone')").fetchone() == ("UTC",)
        seen: list[object] = []

        def count() -> None:
            with warehouse.read() as con:
                seen.append(con.execute("SELECT count(*) FROM syncs").fetchone())

        threads = [
            threading.Thread(target=contextvars.copy_context().run, args=(count,)) for _ in range(2)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert seen == [(0,), (0,)]
    with warehouse.transaction() as con:  # nothing of the page holds the file any more
        con.execute("CREATE TABLE written_after (x INTEGER)")
    with warehouse.read() as con:
        assert con.execute("SELECT count(*) FROM written_after").fetchone() == (0,)

"""The one vocabulary (fundpipe.vocabulary): what each exception kind means, the exception record
and its JSON forms, the verdict — and the warehouse's views saying the same as its table."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import pytest

from fundpipe.reports.headers import KIND_WORDS
from fundpipe.vocabulary import (
    JSON_FORMS,
    KINDS,
    ExceptionKind,
    ExceptionRecord,
    ExceptionState,
    Verdict,
    is_material,
    kind_words,
    what_to_do,
)
from fundpipe.warehouse.file import Warehouse


@pytest.fixture(scope="module")
def view_sql(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The SQL of every view of a warehouse migrated to today's schema, as DuckDB keeps it."""
    warehouse = Warehouse(Path(tmp_path_factory.mktemp("vocabulary")) / "warehouse.duckdb")
    warehouse.migrate()
    with warehouse.read() as con:
        rows = con.execute("SELECT sql FROM duckdb_views() WHERE NOT internal").fetchall()
    return "\n".join(str(sql) for (sql,) in rows)


def _literals(sql: str) -> set[str]:
    """The SQL's string literals, unquoted (``'it''s'`` → ``it's``)."""
    return {m.replace("''", "'") for m in re.findall(r"'((?:[^']|'')*)'", sql)}


def test_every_kind_has_one_meaning() -> None:
    assert set(KINDS) == set(ExceptionKind)
    assert {str(k): m.words for k, m in KINDS.items()} == KIND_WORDS
    assert kind_words("shortfall") == "Vehicle short of funds"
    assert kind_words("some_new_kind") == "Some new kind"  # an unknown kind, as it is
    assert what_to_do("file_rejected").startswith("correct the file")
    assert what_to_do("exception") == "look into it and decide"


def test_the_views_write_the_actions_the_table_names(view_sql: str) -> None:
    """The action texts stay in SQL (they carry the amounts and names); each kind's fixed words
    in the table are words the live views write."""
    literals = _literals(view_sql)
    missing = {
        (str(kind), words)
        for kind, meaning in KINDS.items()
        for words in meaning.view_actions
        if words not in literals
    }
    assert missing == set()


def test_the_views_apply_the_table_s_materiality_rule(view_sql: str) -> None:
    ruled = set(
        re.findall(
            r"kind\)?\s*=\s*'(\w+)'\)?\s+AND\s+\(?abs\(coalesce\(amount_cents,\s*0\)\)\s*<\s*"
            r"materiality_cents\(\)",
            view_sql,
            flags=re.IGNORECASE,
        )
    )
    assert ruled, "no materiality rule found in the views"
    assert ruled == {str(k) for k, m in KINDS.items() if m.below_materiality_is_no_exception}
    assert not is_material("unexplained_balance", -99, 100)
    assert is_material("unexplained_balance", 100, 100)
    assert is_material("shortfall", 1, 100)  # only reconciling items fall below materiality


RECORD = ExceptionRecord(
    "EX-1",
    ExceptionState.OPEN,
    3,
    "Sheet q4.csv rejected",
    -120_050,
    "fix it",
    "file_rejected",
    True,
    first_seen=date(2026, 11, 25),
    last_seen=date(2026, 11, 28),
    action="fix it",
)


def test_one_record_has_a_json_form_per_output_and_reads_each_back() -> None:
    night = RECORD.as_json("night")
    assert list(night) == list(JSON_FORMS["night"])
    assert night["amount"] == "-$1,200.50"
    assert ExceptionRecord.from_json(night).as_json("night") == night
    published = RECORD.as_json("published")
    assert list(published) == ["id", "state", "what", "amount", "what_to_do"]
    back = ExceptionRecord.from_json(published)
    assert (back.amount_cents, back.as_json("published")) == (-120_050, published)
    lifecycle = RECORD.as_json("lifecycle")
    assert lifecycle["first_seen"] == "2026-11-25"
    assert lifecycle["amount_dollars"] == "-$1,200.50"
    assert "what_to_do" not in lifecycle
    with pytest.raises(ValueError, match="not an amount"):
        ExceptionRecord.from_json({**published, "amount": "1200"})


def test_a_record_s_state_is_an_exception_state() -> None:
    assert ExceptionRecord("EX-2", "acknowledged", 0, "w", None, "", "").state is (  # type: ignore[arg-type]
        ExceptionState.ACKNOWLEDGED
    )
    with pytest.raises(ValueError):
        ExceptionRecord("EX-3", "closed", 0, "w", None, "", "")  # type: ignore[arg-type]


def test_one_verdict_said_two_ways() -> None:
    assert [v.value for v in Verdict] == ["ok", "needs a person", "failed"]
    assert [v.shout for v in Verdict] == ["OK", "NEEDS A PERSON", "FAILED"]

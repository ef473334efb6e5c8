"""The run summary counts each file once (issue 13: a re-run said "accepted 3" and "no-op 3")."""

from __future__ import annotations

from fundpipe.app.outcomes import build_summary


def _file(state: str) -> dict[str, object]:
    return {"file": f"{state}.csv", "state": state, "total_cents": 100, "distributions": 1}


def test_a_rerun_of_submitted_files_is_only_a_no_op() -> None:
    rerun = build_summary([{"files": [_file("duplicate")] * 3}], {}, {})
    facts = rerun["facts"]
    assert facts["files seen"] == 3
    assert facts["files already submitted (no-op)"] == 3
    assert facts["files processed (new)"] == 0
    assert "files accepted" not in facts
    first = build_summary([{"files": [_file("processed")] * 3}], {}, {})["facts"]
    assert (first["files processed (new)"], first["files already submitted (no-op)"]) == (3, 0)

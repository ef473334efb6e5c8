"""`fundpipe sync` and `fundpipe reconcile` read no sheet, so they do not import pandas (about half
a second of every run) — and pandas imported later in the same process still converts as usual."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

# Runs in a fresh interpreter: the test session itself has imported pandas long ago.
STAGE_THEN_PANDAS = """
import sys
from pathlib import Path

import pyarrow.parquet as pq

from fundpipe.sync.stage import Stage

stage = Stage(Path(sys.argv[1]))
stage["entities"].add(
    [{"id": "ent_1", "name": "Ada", "payment_instructions": ["pi_1"], "livemode": False}]
)
stage["distribution_payments"].add(
    [{"id": "dpmt_1", "amount": 1250, "status": None}], defaults={"distribution": "dst_1"}
)
stage.close()
print("pandas imported:", "pandas" in sys.modules)
print(pq.read_table(Path(sys.argv[1]) / "distribution_payments.parquet").to_pylist()[0]["distribution"])

import numpy as np
import pandas as pd
import pyarrow as pa

print("NaN of a Series is null:", pa.array(pd.Series([1.5, np.nan])).null_count == 1)
print("categorical:", pa.array(pd.Categorical(["a", "b", "a"])).type)
print("back to pandas:", pa.table({"x": [1, None]}).to_pandas()["x"].isna().tolist())
"""


def test_staging_a_sync_imports_no_pandas_and_pandas_imported_later_converts_as_usual(
    tmp_path: Path,
) -> None:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(STAGE_THEN_PANDAS), str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert out == [
        "pandas imported: False",
        "dst_1",
        "NaN of a Series is null: True",
        "categorical: dictionary<values=large_string, indices=int8, ordered=0>",
        "back to pandas: [False, True]",
    ]

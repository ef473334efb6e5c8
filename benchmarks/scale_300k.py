"""Benchmark: issue 14's 300k-payment row — first run and re-run with nothing new at R = 1000.

    python benchmarks/scale_300k.py [--scenario 300k@1000]

The harness, the world and the baselines are `benchmarks/scale.py`'s (see its docstring); this
script runs the largest scenario alone so that each script fits five minutes on two shared
cores. Target lines (ratios to baselines of the same run, see scale.py): re-run with nothing
new over 300k payments of history, peak RSS at 300k payments, client CPU per request.
"""

from __future__ import annotations

import scale

if __name__ == "__main__":
    scale.main(("300k@1000",), __doc__ or "")

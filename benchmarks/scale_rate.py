"""Benchmark: issue 14's rate-bound row — 100k payments + 10k new investors at R = 100.

    python benchmarks/scale_rate.py [--scenario 100k@100]

The harness, the world and the baselines are `benchmarks/scale.py`'s (see its docstring); this
scenario waits on the service's rate limit (~105 s of floor for ~10,500 requests), so it runs
alone, without the re-run (scale.py measures that), to keep the script within five minutes. Target line: the first night
takes at most 1.5 × its replay floor (a bare httpx client sending the same requests under the
same R) measured in the same run.
"""

from __future__ import annotations

import scale

if __name__ == "__main__":
    scale.main(("100k@100",), __doc__ or "", rerun=False)

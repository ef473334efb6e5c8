"""Turn benchmarks' output into the README's "What a night costs" table.

    .venv/bin/python benchmarks/scale.py | tee out/scale.txt
    .venv/bin/python benchmarks/table.py out/scale.txt out/client.txt …

Reads the `target …` lines (`benchmarks/targets.py`'s form) of each output file and prints one
Markdown row per target: the benchmark (the file's name), the target, what was measured (the
ratio and both figures) against what baseline, the goal and the verdict. Not a benchmark itself
(`make bench` runs it with no file: it prints the empty table).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

LINE = re.compile(
    r"^target (?P<name>.+?): (?P<measured>.+) vs (?P<goal>[≤≥] [^ ]+×?|≤ [\d,.]+) ?(?P<how>\(.*\))? — (?P<verdict>met|short)$"
)
RATIO = re.compile(r"^(?P<ratio>[\d.]+×) (?P<against>.+?) \((?P<figures>.+)\)$")


def rows(path: Path) -> list[str]:
    """The Markdown rows of one benchmark output file."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        match = LINE.match(line.strip())
        if not match:
            continue
        measured, against = match["measured"], ""
        ratio = RATIO.match(measured)
        if ratio:
            measured = f"**{ratio['ratio']}** ({ratio['figures']})"
            against = ratio["against"]
        elif match["how"]:
            against = match["how"].strip("()")
        verdict = "met" if match["verdict"] == "met" else "**short**"
        out.append(
            f"| {path.stem} | {match['name']} | {measured} | {against} | {match['goal']} | "
            f"{verdict} |"
        )
    return out


def main(paths: list[str]) -> None:
    """Print the table for the output files named on the command line."""
    print("| benchmark | target | measured | baseline (same run) | goal | |")
    print("|---|---|---|---|---|---|")
    for name in paths:
        for row in rows(Path(name)):
            print(row)


if __name__ == "__main__":
    main(sys.argv[1:])

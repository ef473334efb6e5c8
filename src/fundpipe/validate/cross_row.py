"""The cross-row rules of a distribution sheet, run once over the whole sheet on integer codes.

Rows sharing an ``external_reference`` agree on name, vehicle, date and zone (the odd rows out
of each distribution's majority are flagged); no entity twice in one distribution; at most
`MAX_PAYMENTS_PER_DISTRIBUTION` payments per distribution. Work is done in blocks of whole
distributions so no hash of every row's text is held at once (a million-row sheet).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from fundpipe.validate.collect import IssueCollector, column_named
from fundpipe.validate.payments import ParsedDistributions

#: Most payments one distribution may hold (service decision).
MAX_PAYMENTS_PER_DISTRIBUTION = 1000

#: The columns every row of one distribution must agree on.
_AGREEING = ("distribution_name", "vehicle", "distribution_date", "distribution_timezone")


def _majority_disagreement(
    group: np.ndarray, value: np.ndarray, block_rows: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per row: does its value differ from its group's most common value, and that value's code.

    ``group`` and ``value`` are integer codes (-1 = missing, never flagged). Ties go to the value
    seen first, so a single odd row in a group of two or more is the one flagged.
    """
    live = (group >= 0) & (value >= 0)
    majority = np.full(int(group.max()) + 1 if len(group) else 0, -1, dtype=np.int32)
    width = int(value.max()) + 1 if len(value) else 0
    if live.any() and len(majority) * width <= _DENSE_KEYS:
        _dense_majority(group, value, live, width, majority, block_rows)
    elif live.any():
        key = group[live].astype(np.int64) * width + value[live]
        # Hashed, not sorted (a million rows): the distinct keys come in order of first sight.
        codes, distinct = pd.factorize(key)
        del key
        counts = np.bincount(codes)
        del codes
        first_seen = np.arange(len(distinct))
        groups, values = distinct // width, distinct % width
        # per group: most rows first, then the value seen first
        order = np.lexsort((first_seen, -counts, groups))
        ordered = groups[order]
        leader = np.r_[True, ordered[1:] != ordered[:-1]]
        majority[ordered[leader]] = values[order][leader]
    expected = majority[np.maximum(group, 0)]
    expected[group < 0] = -1
    return live & (value != expected), expected


#: Most (distribution, value) pairs counted in plain arrays (else hashed): 1 Mi (8 MiB at most).
_DENSE_KEYS = 2**20


def _dense_majority(
    group: np.ndarray,
    value: np.ndarray,
    live: np.ndarray,
    width: int,
    majority: np.ndarray,
    block_rows: int,
) -> None:
    """`_majority_disagreement`'s majority per group, counting pairs in arrays indexed by the
    pair (few distributions and values: the usual sheet), without a per-row hash."""
    size = len(majority) * width
    key = group.astype(np.int32)
    key *= width
    key += value
    key[~live] = size  # one extra slot for the rows that count for nothing
    counts = np.bincount(key, minlength=size + 1)[:size]
    # the first row of each pair
    first = np.full(size + 1, len(group), dtype=np.int32)
    for at in range(0, len(key), block_rows):
        part = key[at : at + block_rows]
        np.minimum.at(first, part, np.arange(at, at + len(part), dtype=np.int32))
    del key
    pairs = np.flatnonzero(counts)
    groups, values = pairs // width, pairs % width
    # per group: most rows first, then the value seen first
    order = np.lexsort((first[pairs], -counts[pairs], groups))
    ordered = groups[order]
    leader = np.r_[True, ordered[1:] != ordered[:-1]]
    majority[ordered[leader]] = values[order][leader]


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """Integer codes per row (-1 = null) and the distinct values they index, in order of
    first sight."""
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)
    column = column.unify_dictionaries()
    codes = np.empty(len(column), dtype=np.int32)
    at = 0
    for chunk in column.chunks:
        codes[at : at + len(chunk)] = pc.fill_null(chunk.indices, -1).to_numpy(zero_copy_only=False)
        at += len(chunk)
    names = column.chunk(0).dictionary if column.num_chunks else pa.array([], pa.string())
    return codes, names


def _texts(names: pa.Array, codes: np.ndarray) -> list[str]:
    """``names[code]`` for each code, as Python strings."""
    return [str(v) for v in pc.take(names, pa.array(codes, type=pa.int32())).to_pylist()]


def check_cross_row(
    parsed: ParsedDistributions, issues: IssueCollector, *, block_rows: int
) -> None:
    """Add to ``issues`` every break of the cross-row rules in ``parsed`` (rows that disagree
    with their distribution, an entity twice in one, a distribution too large), working
    ``block_rows`` rows at a time."""
    group, ref_names = _codes(parsed.text["external_reference"])
    if not len(ref_names):
        return
    rows = parsed.rows
    for column in _AGREEING:
        if column in parsed.coded:
            codes, names = parsed.coded[column].codes_and_names()
        else:
            codes, names = _codes(parsed.text[column])
        disagree, expected = _majority_disagreement(group, codes, block_rows)
        if disagree.any():
            named = column_named(column)
            where = np.flatnonzero(disagree)
            refs = _texts(ref_names, group[where])
            most = _texts(names, expected[where])
            issues.add_frame(
                pd.DataFrame(
                    {
                        "row": rows[where],
                        "column": column,
                        "value": _texts(names, codes[where]),
                        "check": "distribution_rows_agree",
                        "reason": [
                            f"rows of distribution {r} disagree on {named}; most say {m}"
                            for r, m in zip(refs, most, strict=True)
                        ],
                    }
                )
            )
        del codes
        del disagree, expected

    twice = _entities_twice(group, parsed.text["entity"], block_rows)
    if len(twice):
        values = [str(v) for v in parsed.text["entity"].take(pa.array(twice)).to_pylist()]
        issues.add_frame(
            pd.DataFrame(
                {
                    "row": rows[twice],
                    "column": "entity",
                    "value": values,
                    "check": "entity_once_per_distribution",
                    "reason": [
                        f"entity appears more than once in distribution {r}"
                        for r in _texts(ref_names, group[twice])
                    ],
                }
            )
        )

    sizes = np.bincount(group[group >= 0], minlength=len(ref_names))
    for code in np.flatnonzero(sizes > MAX_PAYMENTS_PER_DISTRIBUTION):
        name, size = str(ref_names[int(code)]), int(sizes[code])
        issues.add_sheet_level(
            "external_reference",
            name,
            "payments_per_distribution",
            f"distribution {name} has {size:,} payments; at most "
            f"{MAX_PAYMENTS_PER_DISTRIBUTION:,} are allowed — split it",
        )


def _entities_twice(group: np.ndarray, entity: pa.ChunkedArray, block_rows: int) -> np.ndarray:
    """Positions of rows whose entity an earlier row of the same distribution already names.

    Rows are taken distribution by distribution (a stable sort of the group codes, so each
    distribution's rows keep their order) in blocks of whole distributions: no hash of every
    entity of the sheet at once (a million distinct texts).
    """
    live = group[group >= 0]
    if np.all(live[1:] >= live[:-1]):
        del live
        return _entities_twice_in_runs(group, entity, block_rows)
    del live
    order = np.argsort(group, kind="stable")
    order = order[group[order] >= 0]
    found: list[np.ndarray] = []
    at = 0
    while at < len(order):
        stop = min(at + block_rows, len(order))
        # extend to the end of the last distribution of the block
        last = group[order[stop - 1]]
        while stop < len(order) and group[order[stop]] == last:
            stop += 1
        block = order[at:stop]
        found.append(block[_twice_in_block(group[block], entity.take(pa.array(block)))])
        at = stop
    if not found:
        return np.array([], dtype=np.int64)
    return np.sort(np.concatenate(found))


def _twice_in_block(group: np.ndarray, entity: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Positions in a block of whole distributions whose (distribution, entity) an earlier row
    of the block already has; rows without either never count."""
    # one chunk: encoded with no dictionaries to unify afterwards
    whole = entity.combine_chunks() if isinstance(entity, pa.ChunkedArray) else entity
    codes, _ = _codes(pa.chunked_array([whole]))
    key = pd.Series(group.astype(np.int64) * (int(codes.max()) + 2) + codes)
    twice = key.duplicated(keep="first").to_numpy() & (codes >= 0) & (group >= 0)
    return np.flatnonzero(twice)


def _entities_twice_in_runs(
    group: np.ndarray, entity: pa.ChunkedArray, block_rows: int
) -> np.ndarray:
    """`_entities_twice` for the usual sheet, each distribution's rows together: blocks of
    whole distributions are plain slices of the column (no sort, no copy of the order)."""
    found: list[np.ndarray] = []
    n = len(group)
    at = 0
    while at < n:
        stop = min(at + block_rows, n)
        last = group[stop - 1]
        while stop < n and (group[stop] == last or group[stop] < 0):
            stop += 1
        found.append(_twice_in_block(group[at:stop], entity.slice(at, stop - at)) + at)
        at = stop
    return np.concatenate(found) if found else np.array([], dtype=np.int64)

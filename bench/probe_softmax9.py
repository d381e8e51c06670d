"""Probe the persistent split-row softmax with each chunk's normalization deferred a round
("rowsplit_defer": a program publishes round k's chunk statistics, then normalizes round k - 1's
chunk, whose row was published a round earlier) at the long-row shapes, beside the shipped
config, torch.softmax and a same-size device copy (issue 10, session 7).

    PYTHONPATH=/tmp/site:$PWD python3 bench/probe_softmax9.py --out DIR [--budget 100]
    PYTHONPATH=$PWD python3 bench/probe_softmax9.py --out DIR --dry-run   # CPU interpreter
    PYTHONPATH=$PWD python3 bench/probe_softmax9.py --out DIR --sm90      # offline registers

Method as bench/probe_softmax7.py (its Session, cases and tables): each implementation checked
against float64 first, never timed when wrong; device time by CUDA-graph replay, L2 flushed.
Columns {chunk in K}k{c|r}[p] (8 warps at 8192 in 16-bit, else 4): c = the chunk carried in
registers across the round, r = re-read; p = the next round's chunk loaded a round ahead. Writes
DIR/probe_softmax9.csv (with `programs`, the persistent grid P each candidate ran with).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from probe_softmax4 import sweep_main  # noqa: E402
from probe_softmax7 import CASES, programs_column, report, sm90_table  # noqa: E402

# (chunk, warps, carry, prefetch) per item size
CONFIGS = {
    2: [(8192, 8, True, False), (8192, 8, False, False), (8192, 8, True, True)]
    + [(8192, 8, False, True), (4096, 4, True, False), (4096, 4, False, False)],
    4: [(8192, 4, True, False), (8192, 4, False, False), (8192, 4, False, True)]
    + [(4096, 4, True, False), (4096, 4, False, False)],
}


def _name(chunk: int, warps: int, carry: bool, prefetch: bool) -> str:
    # warps are implied: 8 at 8192 in 16-bit, 4 otherwise (the shipped rowsplit's rule)
    return f"{chunk // 1024}k" + ("c" if carry else "r") + ("p" if prefetch else "")


COLUMNS = ["cur", *dict.fromkeys(_name(*c) for i in (2, 4) for c in CONFIGS[i])]


def candidates(shape, itemsize: int) -> list[tuple[str, tuple]]:
    rows, cols = shape
    out = []
    for chunk, warps, carry, prefetch in CONFIGS[itemsize]:
        if cols <= 8192 and chunk == 4096:
            continue  # the control shape: the 8192-element items only
        splits = 1 << (-(-cols // chunk) - 1).bit_length()
        name = _name(chunk, warps, carry, prefetch)
        out.append((name, ("rowsplit_defer", chunk, splits, warps, carry, prefetch)))
    return out


def sm90(lab) -> None:
    kernel = lab._softmax_rowsplit_defer_kernel
    sm90_table(lab, candidates, kernel, lambda dtype, cfg: {"CARRY": cfg[4], "PREFETCH": cfg[5]})


def _report(df, seconds: float) -> None:
    report(df, seconds, COLUMNS)


def main() -> None:
    add = programs_column("_softmax_rowsplit_defer_kernel", "rowsplit_defer")
    sweep_main(__doc__, 100.0, "probe_softmax9.csv", CASES, candidates, _report, sm90, add)


if __name__ == "__main__":
    main()

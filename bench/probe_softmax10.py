"""Probe the persistent split-row softmax fed through tensor descriptors ("rowsplit_tma": the
next rounds' chunks prefetched into shared memory by Triton's pipeliner while this round's
exchange waits; the exchange in two asm blocks so the pipeliner keeps the loop) at the long-row
shapes, beside the shipped config, torch.softmax and a same-size device copy (issue 10,
session 7).

    PYTHONPATH=/tmp/site:$PWD python3 bench/probe_softmax10.py --out DIR [--budget 100]
    PYTHONPATH=$PWD python3 bench/probe_softmax10.py --out DIR --dry-run   # CPU interpreter
    PYTHONPATH=$PWD python3 bench/probe_softmax10.py --out DIR --sm90      # offline registers

Method as bench/probe_softmax7.py (its Session, cases and tables): each implementation checked
against float64 first, never timed when wrong; device time by CUDA-graph replay, L2 flushed.
Columns t{chunk in K}w{warps}s{stages}. Writes DIR/probe_softmax10.csv (with `programs`, the
persistent grid P each candidate ran with).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from probe_softmax4 import sweep_main  # noqa: E402
from probe_softmax7 import CASES, programs_column, report, sm90_table  # noqa: E402

# (chunk, warps, stages) per item size
CONFIGS = {
    2: [(8192, 8, 2), (8192, 8, 3), (8192, 8, 4), (4096, 4, 3), (4096, 4, 4), (8192, 4, 3)],
    4: [(8192, 4, 3), (8192, 8, 3), (4096, 4, 3), (4096, 4, 4), (8192, 8, 4)],
}


def _name(chunk: int, warps: int, stages: int) -> str:
    return f"t{chunk // 1024}w{warps}s{stages}"


COLUMNS = ["cur", *dict.fromkeys(_name(*c) for i in (2, 4) for c in CONFIGS[i])]


def candidates(shape, itemsize: int) -> list[tuple[str, tuple]]:
    rows, cols = shape
    out = []
    for chunk, warps, stages in CONFIGS[itemsize]:
        splits = 1 << (-(-cols // chunk) - 1).bit_length()
        out.append((_name(chunk, warps, stages), ("rowsplit_tma", chunk, splits, warps, stages)))
    return out


def sm90(lab) -> None:
    short = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}

    def c_of(dtype: str) -> int:  # elements per 128-byte descriptor row
        return lab.TMA_ROW_BYTES // (2 if dtype != "float32" else 4)

    def args_of(dtype: str, cfg: tuple) -> dict:
        desc = f"tensordesc<{short[dtype]}[{cfg[1] // c_of(dtype)},{c_of(dtype)}]>"
        args = {"XD": desc, "YD": desc, "STATS": "*fp32", "COUNT": "*i32"}
        return args | {"n_rows": "i32", "n_cols": "i32"}

    def flags(dtype: str, cfg: tuple) -> dict:
        return {"C": c_of(dtype), "STAGES": cfg[4]}

    kernel = lab._softmax_rowsplit_tma_kernel
    sm90_table(lab, candidates, kernel, flags, args_of, lambda cfg: cfg[4])


def _report(df, seconds: float) -> None:
    report(df, seconds, COLUMNS)


def main() -> None:
    add = programs_column("_softmax_rowsplit_tma_kernel", "rowsplit_tma")
    sweep_main(__doc__, 100.0, "probe_softmax10.csv", CASES, candidates, _report, sm90, add)


if __name__ == "__main__":
    main()

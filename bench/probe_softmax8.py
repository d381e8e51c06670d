"""Probe the descriptor-fed loop softmax ("looptma": one program per row, chunks of x through a
tensor descriptor so Triton's pipeliner keeps STAGES of them in flight in shared memory, the row
read again from L2 for pass 2, no exchange between programs) at the long-row shapes, beside the
shipped config, torch.softmax and a same-size device copy (issue 10, session 6c).

    PYTHONPATH=/tmp/site:$PWD python3 bench/probe_softmax8.py --out DIR [--budget 90]
    PYTHONPATH=$PWD python3 bench/probe_softmax8.py --out DIR --dry-run   # CPU interpreter

Method as bench/probe_softmax7.py (its Session, summary and table): each implementation checked
against float64 first, never timed when wrong; device time by CUDA-graph replay, L2 flushed.
Columns {chunk in K}k{stages}{warps}[p{programs per SM}] (see CONFIGS). Writes
DIR/probe_softmax8.csv.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from probe_softmax4 import Session, summarize  # noqa: E402
from probe_softmax7 import CASES, report  # noqa: E402

# (chunk, stages, warps, programs per SM: 0 = one program per row); shared memory per program:
# (stages - 1) x chunk x itemsize. Names {chunk in K}k{stages}{warps}[p{programs per SM}].
CONFIGS = [
    (4096, 4, 4, 0),
    (4096, 4, 4, 4),
    (4096, 6, 4, 4),
    (8192, 3, 8, 0),
    (8192, 3, 8, 2),
    (8192, 4, 8, 2),
]


def _name(chunk: int, stages: int, warps: int, per_sm: int) -> str:
    return f"{chunk // 1024}k{stages}{warps}" + (f"p{per_sm}" if per_sm else "")


COLUMNS = ["cur", *(_name(*c) for c in CONFIGS)]


def candidates(shape, itemsize: int) -> list[tuple[str, tuple]]:
    return [(_name(*c), ("looptma", c[0], c[1], c[2], c[3])) for c in CONFIGS]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--budget", type=float, default=90.0, help="seconds before skipping the rest")
    ap.add_argument("--dry-run", action="store_true", help="CPU interpreter, 3 rows, no timing")
    args = ap.parse_args()
    if args.dry_run:
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported
    t0 = time.monotonic()

    import pandas as pd

    run = Session(args, t0)
    run.start()
    run.sweep(CASES, candidates, real_shape=True)
    df = summarize(pd.DataFrame(run.rows), run.spec, run.copy_cache).drop(columns="vs_compile")
    df.to_csv(args.out / "probe_softmax8.csv", index=False)
    report(df, time.monotonic() - t0, COLUMNS)


if __name__ == "__main__":
    main()

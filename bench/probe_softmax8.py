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

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from probe_softmax4 import sweep_main  # noqa: E402
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


def _report(df, seconds: float) -> None:
    report(df, seconds, COLUMNS)


def main() -> None:
    sweep_main(__doc__, 90.0, "probe_softmax8.csv", CASES, candidates, _report)


if __name__ == "__main__":
    main()

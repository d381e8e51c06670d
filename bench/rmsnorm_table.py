"""Print the lab notebook's RMSNorm table (kernels/NOTES.md) from the stored runs, so every figure
there traces to a capture:  python bench/rmsnorm_table.py RUN_V1 RUN_V2 [TUNE_CSV]"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

root = Path("profiles")
v1, v2 = (pd.read_csv(root / r / "cases.csv") for r in sys.argv[1:3])
ceil = json.loads((root / sys.argv[2] / "manifest.json").read_text())["ceilings"]
tune = pd.read_csv(sys.argv[3]) if len(sys.argv) > 3 else None
cols = [
    "dtype",
    "shape",
    "floor us",
    "v0 tune best",
    "v1 us",
    "v2 us",
    "v2 % copy",
    "v2 spread",
    "eager",
    "native",
    "compile",
]
print("| " + " | ".join(cols) + " |")
print("|" + "---|" * len(cols))
for (dtype, shape), g in v2.groupby(["dtype", "shape"], sort=False):
    cur = g.set_index("variant")
    old = v1[(v1.dtype == dtype) & (v1["shape"] == shape)].set_index("variant")
    tri = cur.loc["triton"]
    floor = tri["bytes"] / ceil["copy_gbps"] / 1e3  # bytes / (GB/s) -> us
    best = (
        ""
        if tune is None
        else tune[
            (tune.dtype == dtype) & (tune["shape"] == shape) & (tune.impl == "triton")
        ].p50_ms.min()
        * 1e3
    )
    cells = [
        dtype,
        shape,
        f"{floor:.1f}",
        f"{best:.1f}" if best != "" else "",
        f"{old.loc['triton', 'p50_ms'] * 1e3:.1f}",
        f"{tri.p50_ms * 1e3:.1f}",
        f"{tri.pct_peak_bw:.1f}",
        f"{tri.spread_ms * 1e3:.1f}",
        *(f"{cur.loc[v, 'p50_ms'] * 1e3:.1f}" for v in ("eager", "native", "compile")),
    ]
    print("| " + " | ".join(cells) + " |")

"""Sweep the fused RMSNorm's launch configs at every default shape and dtype, beside the
baselines, to choose launch_config's heuristic. Writes a CSV; prints the best per case.

    PYTHONPATH=. python bench/rmsnorm_tune.py OUT.csv            # row kernel: ROWS x num_warps

(Its `persistent` mode, which swept the persistent-grid kernel tried in commit fa20061 before it was
dropped, produced bench/results/rmsnorm-tune-persistent-h200-20261130b.csv; see kernels/NOTES.md.)
"""

from __future__ import annotations

import importlib
import sys

import pandas as pd
import torch
import triton

from profkit.spec import find_spec, format_shape
from profkit.timing import check, resolve_callable, time_case

spec = find_spec("rmsnorm")
rmsnorm = importlib.import_module("profkit_lab.rmsnorm")
rows_out = []
cache: dict = {}


def measure(fn, shape, dtype, nbytes, **labels) -> None:
    """Check, then time one implementation; append its row."""
    ok = check(spec, fn, shape, dtype, "cuda", seed=1).correct
    t = time_case(spec, fn, shape, dtype, seed=2) if ok else None
    rows_out.append(
        dict(
            dtype=dtype,
            shape=format_shape(shape),
            **labels,
            correct=ok,
            # device time (schema 2) under the column names the stored tuning CSVs use
            p50_ms=t and t.columns["device_p50_ms"],
            spread_ms=t and t.columns["device_iqr_ms"],
            gbps=t and nbytes / t.columns["device_p50_ms"] / 1e6,
        )
    )


for dtype in spec.dtypes:
    for shape in spec.shapes:
        m, n = shape
        nbytes = spec.bytes_moved(shape, torch.finfo(getattr(torch, dtype)).bits // 8)
        block_n = triton.next_power_of_2(n)
        for rows in (1, 2, 4, 8):
            if rows > 1 and (block_n * rows > 16384 or m < rows * 132):
                continue
            for warps in (1, 2, 4, 8, 16, 32):
                per_thread = block_n * rows / (32 * warps)
                if per_thread > 64 or per_thread < 2:
                    continue
                cfg = (block_n, rows, warps)
                measure(
                    lambda inputs, cfg=cfg: rmsnorm.rmsnorm_triton_v3(inputs, cfg),
                    shape,
                    dtype,
                    nbytes,
                    impl="triton",
                    rows=rows,
                    warps=warps,
                )
        for v in spec.variants:
            if v.baseline:
                measure(resolve_callable(v, cache), shape, dtype, nbytes, impl=v.name)
        print(dtype, shape, flush=True)

df = pd.DataFrame(rows_out)
df.to_csv(sys.argv[1], index=False)
heur = {
    (d, s): rmsnorm.launch_config(*map(int, s.split("x")), torch.finfo(getattr(torch, d)).bits // 8)
    for d in spec.dtypes
    for s in map(format_shape, spec.shapes)
}
summary = []
for (dtype, shape), g in df.groupby(["dtype", "shape"], sort=False):
    tri = g[g.impl == "triton"].sort_values("p50_ms")
    best = tri.iloc[0]
    _, hr, hw = heur[(dtype, shape)]
    h = tri[(tri.rows == hr) & (tri.warps == hw)]
    base = g[g.impl != "triton"].set_index("impl").p50_ms
    summary.append(
        dict(
            dtype=dtype,
            shape=shape,
            best=f"r{int(best.rows)}w{int(best.warps)}",
            best_us=round(best.p50_ms * 1e3, 1),
            heur_us=round(h.p50_ms.iloc[0] * 1e3, 1) if len(h) else None,
            best_gbps=round(best.gbps),
            **{k: round(v * 1e3, 1) for k, v in base.items()},
        )
    )
print(pd.DataFrame(summary).to_string(index=False))

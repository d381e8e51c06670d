"""H200 smoke test of the schema-2 timing (issue 7): device time by graph replay, host cost, loop
time, clocks, and the events fallback for a capture-unsafe call. Prints one line per case.

    python3 bench/h200_timing_smoke.py OUT_DIR
"""

from __future__ import annotations

import json
import sys
import time

import torch

from profkit import timing
from profkit.spec import find_spec, parse_shape

out_dir = sys.argv[1]
spec = find_spec("rmsnorm")
rows = []
t0 = time.perf_counter()
prepared: dict = {}
for dtype in ("float16",):
    for shape_text in ("1x4096", "32x16384", "4096x8192", "16384x8192"):
        shape = parse_shape(shape_text)
        for variant in spec.variants:
            fn = timing.resolve_callable(variant, prepared)
            t = timing.time_case(spec, fn, shape, dtype, seed=7)
            rows.append({"variant": variant.name, "dtype": dtype, "shape": shape_text, **t.columns})

# a capture-unsafe call: a host sync inside (.item()) cannot be captured in a graph
x = torch.randn(4096, 4096, device="cuda")


def unsafe() -> None:
    if (x.sum() > 1e30).item():
        raise AssertionError


t = timing.measure_call(unsafe)
rows.append({"variant": "unsafe(.item)", "dtype": "float32", "shape": "4096x4096", **t.columns})
wall = time.perf_counter() - t0
with open(f"{out_dir}/timing-smoke.json", "w") as f:
    json.dump({"rows": rows, "wall_s": wall}, f, indent=1)
print(f"{'variant':14} {'shape':11} {'method':6} {'p50 us':>8} {'p95 us':>8} {'host us':>8} "
      f"{'loop us':>8} {'n':>4} {'sm MHz':>6} {'ovh us':>6}  note")  # fmt: skip
for r in rows:
    print(
        f"{r['variant']:14} {r['shape']:11} {r['device_method']:6} {r['device_p50_ms'] * 1e3:8.2f} "
        f"{r['device_p95_ms'] * 1e3:8.2f} {r['host_us']:8.1f} {r['loop_us']:8.1f} "
        f"{r['device_reps']:4d} {r.get('sm_clock_mhz', float('nan')):6.0f} "
        f"{r['device_overhead_us']:6.2f}  "
        f"{r.get('clock_note', '')} {r['device_note'][:60]}"
    )
print(f"wall {wall:.1f} s")

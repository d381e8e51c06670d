"""Device p50 against ncu's gpu__time_duration for the single-kernel cases of a run (issue 7's
goal: within 10% or 1 us).

    python3 bench/counter_agreement.py RUN
"""

from __future__ import annotations

import sys
from pathlib import Path

from profkit import store

c = store.load(Path(sys.argv[1])).cases
one = c[(c.kernel_count == 1) & c.device_p50_ms.notna()].copy()
one["device_us"] = one.device_p50_ms * 1e3
one["ncu_us"] = one.ncu_duration_ms * 1e3
one["delta_us"] = one.device_us - one.ncu_us
one["delta_pct"] = one.delta_us / one.ncu_us * 100
one["ok"] = (one.delta_pct.abs() <= 10) | (one.delta_us.abs() <= 1)
print(f"single-kernel cases: {len(one)}; within 10% or 1 us: {int(one.ok.sum())}")
print(
    f"median |delta| {one.delta_pct.abs().median():.1f}%, largest {one.delta_pct.abs().max():.1f}%"
)
cols = ["variant", "dtype", "shape", "device_us", "ncu_us", "delta_us", "delta_pct", "ok"]
print(one.reindex(one.delta_pct.abs().sort_values().index)[cols].tail(8).round(2).to_string())

"""Run-to-run agreement of device p50 between two runs of the same sweep (issue 7's goal).

python3 bench/timing_repro.py RUN_A RUN_B
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from profkit import store

a, b = (store.load(Path(p)).cases.set_index("case") for p in sys.argv[1:3])
both = a.index.intersection(b.index)
a, b = a.loc[both], b.loc[both]
df = pd.DataFrame(
    {
        "a_us": a.device_p50_ms * 1e3,
        "b_us": b.device_p50_ms * 1e3,
        "delta_us": (b.device_p50_ms - a.device_p50_ms) * 1e3,
        "delta_pct": (b.device_p50_ms / a.device_p50_ms - 1) * 100,
    }
).dropna()
big = df[df.a_us > 20]
shift = df.delta_pct.abs()
print(f"cases {len(df)}: within 5% {(shift <= 5).mean():.1%}, "
      f"within 10% {(shift <= 10).mean():.1%}, largest {shift.max():.1f}%")  # fmt: skip
print(f"cases over 20 us ({len(big)}): largest {big.delta_pct.abs().max():.1f}%; "
      f"largest absolute shift at any size {df.delta_us.abs().max():.2f} us")  # fmt: skip
print(df.reindex(df.delta_pct.abs().sort_values().index).tail(10).round(2).to_string())

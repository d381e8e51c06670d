"""Every documented cases.csv column (docs/tables.md), for tests that build tables by hand."""

import math

from profkit.counters.metrics import COUNTER_COLUMNS

NAN = math.nan
CASE_COLUMNS = (
    "kernel", "variant", "baseline", "dtype", "shape", "case", "correct", "rel_err", "max_abs_err",
    "error", "device_reps", "device_p50_ms", "device_p95_ms", "device_p5_ms", "device_iqr_ms",
    "bytes", "flops", "gbps", "tflops", "pct_peak_bw", "pct_peak_flops", *COUNTER_COLUMNS,
)  # fmt: skip

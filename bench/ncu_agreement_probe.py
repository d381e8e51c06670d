"""Why ncu's gpu__time_duration and profkit's device p50 disagree at a few small cases (issue 7).

Launches each case LAUNCHES times, each after profkit's L2 flush and inside its own NVTX range,
so ncu (run around this script) gives several durations per case instead of the capture's one.
Without ncu (--device) it prints the cases' device p50 (profkit.devicetime) instead.

    ncu --nvtx --nvtx-include "regex:agree@.+/" --metrics gpu__time_duration.sum \
        --cache-control all --csv --page raw python3 bench/ncu_agreement_probe.py > ncu.csv
    python3 bench/ncu_agreement_probe.py --device > device.csv
"""

from __future__ import annotations

import sys

import nvtx
import torch

from profkit import devicetime
from profkit.spec import find_spec
from profkit.timing import resolve_callable

CASES = [
    ("native", "bfloat16", (32, 16384)),
    ("native", "bfloat16", (16, 8192)),
    ("native", "float32", (16, 8192)),
    ("native", "float16", (4096, 8192)),
    ("triton", "float16", (16, 8192)),
    ("triton", "bfloat16", (32, 16384)),
]
LAUNCHES = 5

spec = find_spec("rmsnorm")
cache: dict = {}
flush = devicetime._flusher(False)
device = "--device" in sys.argv
if device:
    print("case,device_p50_us,device_p5_us,device_p95_us")
for variant, dtype, shape in CASES:
    fn = resolve_callable(spec.variant(variant), cache)
    name = f"{variant}.{dtype}.{shape[0]}x{shape[1]}"
    gen = torch.Generator(device="cuda").manual_seed(5)
    inputs = spec.make_inputs(shape, dtype, "cuda", gen)
    if device:
        s = devicetime.measure(lambda fn=fn, inputs=inputs: fn(inputs)).summary()
        print(f"{name},{s['device_p50_ms'] * 1e3:.3f},{s['device_p5_ms'] * 1e3:.3f},"
              f"{s['device_p95_ms'] * 1e3:.3f}")  # fmt: skip
        continue
    fn(inputs)
    torch.cuda.synchronize()
    for i in range(LAUNCHES):
        flush()
        torch.cuda.synchronize()
        with nvtx.annotate(f"{name}.{i}", domain="agree"):
            fn(inputs)
            torch.cuda.synchronize()

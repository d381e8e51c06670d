"""How much of a small case's device time is the kernel's launch inside the graph (issue 7's open
agreement question): device time (profkit.devicetime) and ncu's gpu__time_duration of kernels
that do almost nothing, next to two of the cases that missed the agreement goal.

    python3 bench/graph_launch_probe.py --device            # device p50 per kernel, CSV
    ncu --nvtx --nvtx-include "regex:glp@.+/" --metrics gpu__time_duration.sum \
        --csv --page raw python3 bench/graph_launch_probe.py  # 5 launches per kernel under ncu

If device time minus ncu's duration is about the same for a one-element add as for the missed
F.rms_norm cases, the gap is the method's (the launch inside the window), not the kernels'.
"""

from __future__ import annotations

import sys

import nvtx
import torch
import torch.nn.functional as F

from profkit import devicetime

one = torch.zeros(1, device="cuda")
x1 = torch.randn(1, 4096, device="cuda")
x16 = torch.randn(16, 8192, device="cuda")
w1, w16 = torch.ones(4096, device="cuda"), torch.ones(8192, device="cuda")
CASES = {
    "add_1_element": lambda: one.add_(1),
    "fill_1_element": lambda: one.fill_(0),
    "native_fp32_1x4096": lambda: F.rms_norm(x1, (4096,), w1, 1e-6),
    "native_fp32_16x8192": lambda: F.rms_norm(x16, (8192,), w16, 1e-6),
}

if "--device" in sys.argv:
    print("kernel,device_p50_us,device_p5_us,device_p95_us,overhead_us")
    for name, fn in CASES.items():
        s = devicetime.measure(fn).summary()
        print(f"{name},{s['device_p50_ms'] * 1e3:.3f},{s['device_p5_ms'] * 1e3:.3f},"
              f"{s['device_p95_ms'] * 1e3:.3f},{s['device_overhead_us']:.3f}")  # fmt: skip
else:
    flush = devicetime._flusher(False)
    for name, fn in CASES.items():
        fn()
        torch.cuda.synchronize()
        for i in range(5):
            flush()
            torch.cuda.synchronize()
            with nvtx.annotate(f"{name}.{i}", domain="glp"):
                fn()
                torch.cuda.synchronize()

"""Host cost and eager-loop time: what a call costs the CPU, and what a Python loop of it sustains.

- Host cost: the CPU time of one call (Python, dispatch, guards, launch), from back-to-back calls
  with no synchronization. Batches are short (HOST_CALLS calls) and start on an idle GPU, so the
  launch queue never fills and the host never waits on the device inside the window.
- Eager-loop time: wall time per call of a plain loop of calls followed by one synchronize, with
  the inputs left warm in L2 as a real loop would. It is max(host, device) and more, whichever
  side limits.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

HOST_CALLS, HOST_BATCHES = 20, 10
LOOP_TARGET_MS = 10.0  # wall time of one eager-loop batch
LOOP_MIN_CALLS, LOOP_MAX_CALLS, LOOP_BATCHES = 5, 2000, 3


def host_cost_us(
    fn: Callable[[], Any], calls: int = HOST_CALLS, batches: int = HOST_BATCHES
) -> list[float]:
    """Per-call CPU time of each batch, microseconds."""
    out = []
    for _ in range(batches):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) / calls * 1e6)
    torch.cuda.synchronize()
    return out


def loop_us(fn: Callable[[], Any], device_ms: float, host_us: float) -> list[float]:
    """Per-call wall time of each eager-loop batch (calls, then one synchronize), microseconds."""
    per_call_ms = max(device_ms, host_us / 1e3, 1e-3)
    calls = int(min(LOOP_MAX_CALLS, max(LOOP_MIN_CALLS, LOOP_TARGET_MS / per_call_ms)))
    out = []
    for _ in range(LOOP_BATCHES):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) / calls * 1e6)
    return out


def median(values: list[float]) -> float:
    return float(np.median(values))

"""Device time: the GPU time of one call, with the host off the critical path.

Primary method, CUDA-graph replay: many calls are captured into one graph, each preceded by an L2
flush (a 256 MB memset, inside the graph, so every call starts cold as under ncu's default cache
control) and bracketed by timing events recorded *inside* the graph (external events). Replaying
the graph runs the calls back to back on the GPU whatever the host does, and each call yields one
sample. (triton.testing.do_bench_cudagraph does not flush: with a working set under the 60 MB L2
it would time the cache.)

Fallback, for a variant that cannot be captured (host syncs, capture-unsafe ops): events around
each call, with the stream held behind a spin kernel (torch.cuda._sleep) until a batch of calls is
queued, so the event window still holds no host time unless the call itself syncs. The reason for
the fallback is recorded.

Nothing host-side (NVTX, Python bookkeeping) sits between a call's two events.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from profkit import clocks

FLUSH_BYTES = 256 * 1024 * 1024  # > 4x the H200's 60 MB L2
TARGET_MS = 150.0  # GPU time spent on samples per case (flushes excluded)
MIN_SAMPLES, MAX_SAMPLES = 30, 500
CALLS_PER_GRAPH = 50  # calls captured per graph; replayed until enough samples
SPIN_BATCH = 20  # calls queued behind one spin kernel in the fallback
SPIN_CYCLES_PER_US = 2000  # ~ the H200's 1.98 GHz boost clock; a longer spin only costs time


@dataclass
class DeviceTime:
    samples_ms: list[float]
    method: str  # "graph" | "events"
    note: str = ""  # why the fallback was taken
    clocks: dict = field(default_factory=dict)

    def summary(self) -> dict:
        x = np.asarray(self.samples_ms)
        p5, p25, p50, p75, p95 = np.percentile(x, [5, 25, 50, 75, 95])
        return {
            "device_reps": len(x),
            "device_p50_ms": float(p50),
            "device_p95_ms": float(p95),
            "device_p5_ms": float(p5),
            "device_iqr_ms": float(p75 - p25),
            "device_method": self.method,
            "device_note": self.note,
            **self.clocks,
        }


def _flusher(warm_l2: bool) -> Callable[[], Any]:
    if warm_l2:
        return lambda: None
    cache = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")
    return cache.zero_


def _estimate_ms(fn: Callable[[], Any], flush: Callable[[], Any]) -> float:
    """One call's GPU time, roughly, with the same flush before it (warms up as well)."""
    for _ in range(2):
        flush()
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(3):
        flush()
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return max(min(times), 1e-3)


def sample_count(estimate_ms: float) -> int:
    return int(min(MAX_SAMPLES, max(MIN_SAMPLES, TARGET_MS / estimate_ms)))


def measure(fn: Callable[[], Any], *, warm_l2: bool = False) -> DeviceTime:
    flush = _flusher(warm_l2)
    n = sample_count(_estimate_ms(fn, flush))
    try:
        samples, clock = _graph_samples(fn, flush, n)
        return DeviceTime(samples, "graph", clocks=clock)
    except Exception as exc:  # capture-unsafe variant: record why, time it with events
        torch.cuda.synchronize()
        reason = f"graph capture failed ({type(exc).__name__}: {str(exc).splitlines()[0][:160]})"
        samples, clock = _spin_event_samples(fn, flush, n)
        return DeviceTime(samples, "events", reason, clocks=clock)


def _graph_samples(fn, flush, n: int) -> tuple[list[float], dict]:
    k = min(n, CALLS_PER_GRAPH)
    # torch requires a warm-up on a side stream before capture (lazy init, cuBLAS workspaces)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True, external=True) for _ in range(k)]
    ends = [torch.cuda.Event(enable_timing=True, external=True) for _ in range(k)]
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(k):
            flush()
            starts[i].record()
            fn()  # its outputs are freed at once: the graph's pool reuses them
            ends[i].record()
    samples: list[float] = []
    probe = clocks.Probe()
    for _ in range(math.ceil(n / k)):
        graph.replay()
        probe.read()  # while the replay runs on the GPU
        torch.cuda.synchronize()
        samples += [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]
    del graph
    return samples[:n] if len(samples) > n else samples, probe.summary()


def _spin_event_samples(fn, flush, n: int) -> tuple[list[float], dict]:
    """Events around each call; a spin kernel holds the stream while a batch is queued."""
    from profkit.hostcost import host_cost_us

    hold_us = 2 * SPIN_BATCH * host_cost_us(fn, calls=5, batches=1)[0] + 100
    samples: list[float] = []
    probe = clocks.Probe()
    while len(samples) < n:
        b = min(SPIN_BATCH, n - len(samples))
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(b)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(b)]
        torch.cuda._sleep(int(hold_us * SPIN_CYCLES_PER_US))
        for i in range(b):
            flush()
            starts[i].record()
            fn()
            ends[i].record()
        probe.read()
        torch.cuda.synchronize()
        samples += [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]
    return samples, probe.summary()

"""Device time: the GPU time of one call, with the host off the critical path.

Primary method, CUDA-graph replay: many calls are captured into one graph, each preceded by an L2
flush and bracketed by timing events recorded *inside* the graph (external events). Replaying the
graph runs the calls back to back on the GPU whatever the host does, and each call yields one
sample. (triton.testing.do_bench_cudagraph does not flush: with a working set under the 60 MB L2
it would time the cache.)
- The flush *reads* 256 MB (a max over a buffer 4x the L2): the call then starts with a cold and
  clean L2, as under ncu's default cache control. A memset flush leaves ~60 MB of dirty lines whose
  write-back lands inside the next call (seen on the H200: +10-13% at 4096x8192 RMSNorm).
- The event pair's own cost (an empty window, timed in the same graph, after the same flush) is
  subtracted from every sample; its median is recorded as device_overhead_us.

Fallback, for a variant that cannot be captured (host syncs, capture-unsafe ops): events around
each call, with the stream held behind a spin kernel (torch.cuda._sleep) until a batch of calls is
queued, so the event window still holds no host time unless the call itself syncs. The reason for
the fallback is recorded.

Rounds: the samples come from ROUNDS separate graphs, each over freshly allocated inputs (when
the caller can make them). On the H200 the medians of one graph's replays spread 0.05-0.19 us,
those of separate graphs of the same case 0.08-0.37 us, and in one earlier session two processes
differed by 0.4-0.8 us at 3-10 us cases: an offset fixed per capture, which one graph cannot
average out. Its source is not identified: a new graph over the same inputs moved the median as
much as one over fresh inputs (bench/timing_rounds.py, kernels/NOTES.md "Timing (issue 7),
session 3", which also retracts this docstring's first guess, the inputs' addresses); pooling
graphs spreads it over the samples whatever it is.

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
ROUNDS = 4  # separate graphs (fresh inputs each) whose samples are pooled
SPIN_BATCH = 20  # calls queued behind one spin kernel in the fallback
SPIN_CYCLES_PER_US = 2000  # ~ the H200's 1.98 GHz boost clock; a longer spin only costs time


@dataclass
class DeviceTime:
    samples_ms: list[float]
    method: str  # "graph" | "events"
    note: str = ""  # why the fallback was taken
    clocks: dict = field(default_factory=dict)
    overhead_us: float | None = None  # the empty event window's median, already subtracted

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
            "device_overhead_us": self.overhead_us,
            **self.clocks,
        }


def _flusher(warm_l2: bool) -> Callable[[], Any]:
    if warm_l2:
        return lambda: None
    cache = torch.ones(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    return cache.max  # reads every line: evicts the L2 and leaves it clean


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


def measure(
    fn: Callable[[], Any],
    *,
    warm_l2: bool = False,
    graph: bool = True,
    fresh: Callable[[], Callable[[], Any]] | None = None,
    rounds: int = ROUNDS,
) -> DeviceTime:
    """The samples come from `rounds` graphs: the first times fn, each later one a call made by
    fresh() (new inputs at new addresses) when given, else fn again in a new graph.
    graph=False times with spin-held events directly (a plain copy: a memcpy captured in a graph
    may run on a copy engine, slower than the SM copy an eager call gets)."""
    flush = _flusher(warm_l2)
    n = sample_count(_estimate_ms(fn, flush))
    per_round = [len(part) for part in np.array_split(np.arange(n), max(1, min(rounds, n)))]
    method, note = ("graph" if graph else "events"), ""
    windows, empty, probes = [], [], clocks.Probe()
    for r, count in enumerate(per_round):
        call = fresh() if r and fresh else fn
        w = None
        if method == "graph":
            try:
                w, e = _graph_samples(call, flush, count, probes)
            except Exception as exc:  # capture-unsafe variant: record why, time it with events
                torch.cuda.synchronize()
                first_line = (str(exc).splitlines() or [""])[0][:160]
                note = f"graph capture failed ({type(exc).__name__}: {first_line})"
                method = "events"  # later rounds too: the same call will not capture either
        if w is None:
            w, e = _spin_event_samples(call, flush, count, probes)
        windows += w
        empty += e
    overhead = float(np.median(empty))
    return DeviceTime(
        [w - overhead for w in windows], method, note, probes.summary(), overhead * 1e3
    )


def measure_copy(n: int) -> dict:
    """A device copy of n bytes (n read, n written), timed with spin-held events: a memcpy captured
    in a graph may run on a copy engine (2.76 TB/s seen on the H200 for 1 GiB, against 4.2 for an
    eager copy). Returns the summary columns plus `gbps` (bytes read + written)."""
    src = torch.randint(0, 255, (n,), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    summary = measure(lambda: dst.copy_(src), graph=False).summary()
    return {**summary, "gbps": 2 * n / (summary["device_p50_ms"] * 1e-3) / 1e9}


def _graph_samples(fn, flush, n: int, probe: clocks.Probe) -> tuple[list[float], list[float]]:
    k = min(n, CALLS_PER_GRAPH)
    # torch requires a warm-up on a side stream before capture (lazy init, cuBLAS workspaces)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    events = [torch.cuda.Event(enable_timing=True, external=True) for _ in range(4 * k)]
    starts, ends = events[0:k], events[k : 2 * k]
    empty_starts, empty_ends = events[2 * k : 3 * k], events[3 * k :]
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(k):
            flush()
            empty_starts[i].record()  # the event pair alone: its cost is not the call's
            empty_ends[i].record()
            flush()
            starts[i].record()
            fn()  # its outputs are freed at once: the graph's pool reuses them
            ends[i].record()
    windows: list[float] = []
    empty: list[float] = []
    for _ in range(math.ceil(n / k)):
        graph.replay()
        probe.read()  # while the replay runs on the GPU
        torch.cuda.synchronize()
        windows += [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]
        empty += [s.elapsed_time(e) for s, e in zip(empty_starts, empty_ends, strict=True)]
    del graph
    return windows[:n], empty


def _spin_event_samples(fn, flush, n: int, probe: clocks.Probe) -> tuple[list[float], list[float]]:
    """Events around each call; a spin kernel holds the stream while a batch is queued."""
    from profkit.hostcost import host_cost_us

    hold_us = 2 * SPIN_BATCH * host_cost_us(fn, calls=5, batches=1)[0] + 100
    windows: list[float] = []
    empty: list[float] = []
    while len(windows) < n:
        b = min(SPIN_BATCH, n - len(windows))
        events = [torch.cuda.Event(enable_timing=True) for _ in range(4 * b)]
        torch.cuda._sleep(int(hold_us * SPIN_CYCLES_PER_US))
        for i in range(b):
            flush()
            events[4 * i + 2].record()  # the event pair alone, as in the graph method
            events[4 * i + 3].record()
            flush()
            events[4 * i].record()
            fn()
            events[4 * i + 1].record()
        probe.read()
        torch.cuda.synchronize()
        windows += [events[4 * i].elapsed_time(events[4 * i + 1]) for i in range(b)]
        empty += [events[4 * i + 2].elapsed_time(events[4 * i + 3]) for i in range(b)]
    return windows, empty

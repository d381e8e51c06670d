"""Device time: the GPU time of one call, with the host off the critical path.

Primary method, CUDA-graph replay: many calls are captured into one graph, each preceded by an L2
flush and bracketed by timing events recorded *inside* the graph (external events). Replaying the
graph runs the calls back to back on the GPU whatever the host does, and each call yields one
sample. (triton.testing.do_bench_cudagraph does not flush: with a working set under the 60 MB L2
it would time the cache.)
- The flush *reads* 256 MB (a max over a buffer 4x the L2): the call then starts with a cold and
  clean L2, as under ncu's default cache control. A memset flush leaves ~60 MB of dirty lines whose
  write-back lands inside the next call (seen on the H200: +10-13% at 4096x8192 RMSNorm).
- Each sample is the event window around the call (events recorded inside the graph), with the
  event pair's own cost (an empty window, timed in the same graph, after the same flush)
  subtracted. The window also holds the launch of the call's first kernel inside the graph.
- USE_SPANS (off) reads instead the call's span in CUPTI's kernel timestamps (torch.profiler
  during the replay), with the launch kept apart as device_launch_us. On the H200, against ncu's
  gpu__time_duration with the clocks as found (as profkit's capture runs ncu), the spans read
  0.25-0.86 us under it at 13 single-kernel cases and the event windows 0.58-1.18 us over it
  (a490da2:bench/results/h200-20261130-s5/call1/cupti); in a capture timed by spans (run b48f31)
  the small Triton cases read 1.1 us under, on a 0.25 us grid. Neither clock is closer; events
  stay the device clock, as they do not quantize (notebook "Timing (issue 7), session 5").

Fallback, for a variant that cannot be captured (host syncs, capture-unsafe ops): events around
each call, with the stream held behind a spin kernel (torch.cuda._sleep) until a batch of calls is
queued, so the event window still holds no host time unless the call itself syncs. The reason for
the fallback is recorded.

Rounds: the samples come from ROUNDS separate graphs, each over freshly allocated inputs (when
the caller can make them). On the H200 the medians of one graph's replays spread 0.05-0.19 us,
those of separate graphs of the same case 0.08-0.37 us, and in one earlier session two processes
differed by 0.4-0.8 us at 3-10 us cases: an offset fixed per capture, which one graph cannot
average out. Its source is not identified: a new graph over the same inputs moved the median as
much as one over fresh inputs (a490da2:bench/timing_rounds.py, kernels/NOTES.md "Timing (issue 7),
session 3", which also retracts this docstring's first guess, the inputs' addresses); pooling
graphs spreads it over the samples whatever it is.

Nothing host-side (NVTX, Python bookkeeping) sits between a call's two events.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from profkit.measure import clocks

FLUSH_BYTES = 256 * 1024 * 1024  # > 4x the H200's 60 MB L2
TARGET_MS = 150.0  # GPU time spent on samples per case (flushes excluded)
MIN_SAMPLES, MAX_SAMPLES = 30, 500
CALLS_PER_GRAPH = 50  # calls captured per graph; replayed until enough samples
ROUNDS = 4  # separate graphs (fresh inputs each) whose samples are pooled
SPIN_BATCH = 20  # calls queued behind one spin kernel in the fallback
GPU_ACTIVITIES = {"kernel", "gpu_memcpy", "gpu_memset"}  # Kineto's activity types of GPU work
SPANS, EVENTS = "kernel timestamps", "events"  # what a sample reads
# Off by default: on the H200 (torch 2.11, a490da2:bench/results/h200-20261130-s5/call1/cupti)
# the spans read 0.25-0.86 us *under* ncu's gpu__time_duration (clocks as found) at every
# single-kernel case, on a 0.25 us grid, the event windows 0.58-1.18 us over it: the event windows
# stay the clock.
USE_SPANS = False
SPIN_CYCLES_PER_US = 2000  # ~ the H200's 1.98 GHz boost clock; a longer spin only costs time


@dataclass
class DeviceTime:
    samples_ms: list[float]
    method: str  # "graph" | "events"
    note: str = ""  # why the fallback was taken
    clocks: dict = field(default_factory=dict)
    overhead_us: float | None = None  # the empty event window's median (events: subtracted)
    launch_us: float | None = None  # event window minus kernel span, medians: the graph's launch
    clock: str = EVENTS  # SPANS or EVENTS

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
            # graph replay and spin-held events alike keep the host out of each timed window
            "host_in_window": False,
            "device_note": self.note,
            "device_overhead_us": self.overhead_us,
            "device_launch_us": self.launch_us,
            "device_clock": self.clock,
            **self.clocks,
        }


def _on_gpu(event) -> bool:
    """Kineto's GPU work: newer torch names the activity type; torch 2.11 (the H200's) has only
    the device type, CUDA for kernels, memcpys and memsets alike."""
    if hasattr(event, "activity_type"):
        return event.activity_type() in GPU_ACTIVITIES
    return "CUDA" in str(event.device_type())


class Trace:
    """GPU activities (start_ms, end_ms, name), sorted by start, recorded inside kernel_trace."""

    def __init__(self) -> None:
        self.ops: list[tuple[float, float, str]] = []
        self.error = ""


@contextlib.contextmanager
def kernel_trace(enabled: bool = True) -> Iterator[Trace]:
    """Kernel, memcpy and memset timestamps of the GPU (CUPTI through torch.profiler) for the work
    done inside the block; trace.error says why there are none."""
    trace = Trace()
    if not enabled:
        yield trace
        return
    try:
        from torch.profiler import ProfilerActivity, profile

        prof = profile(activities=[ProfilerActivity.CUDA])
        prof.__enter__()
    except Exception as exc:  # no CUPTI here: the caller falls back to event windows
        trace.error = f"profiler unavailable: {type(exc).__name__}"
        yield trace
        return
    try:
        yield trace
    finally:
        torch.cuda.synchronize()
        prof.__exit__(None, None, None)
    try:
        trace.ops = sorted(
            (e.start_ns() / 1e6, e.end_ns() / 1e6, e.name())
            for e in prof.profiler.kineto_results.events()
            if _on_gpu(e)
        )
    except Exception as exc:
        trace.error = f"trace unreadable: {type(exc).__name__}"


def call_spans(
    ops: Sequence[tuple[float, float, str]], flush: list[str], calls: int, flushes: int = 2
) -> tuple[list[float] | None, str]:
    """Each call's span (first op's start to last op's end, ms) from the trace of `calls` calls,
    each preceded by `flushes` flushes whose ops are named `flush`; (None, why) when the trace
    does not split that way (ops of other work, a call that launched nothing)."""
    if not ops:
        return None, "no GPU activity was recorded"
    if len(ops) % calls:
        return None, f"{len(ops)} GPU ops do not split into {calls} calls"
    size, lead = len(ops) // calls, len(flush) * flushes
    if size <= lead:
        return None, "the call launched no GPU work"
    spans = []
    for c in range(calls):
        group = ops[c * size : (c + 1) * size]
        if [op[2] for op in group[:lead]] != flush * flushes:
            return None, "the trace's order is not flush, call"
        body = group[lead:]
        spans.append(max(op[1] for op in body) - min(op[0] for op in body))
    return spans, ""


class Flush:
    """Evicts the L2 before a call: reads every line of a buffer 4x its size, leaving it clean
    (a no-op with warm_l2). `names()`: the GPU ops one flush launches, read once per kind."""

    _names: dict[bool, list[str]] = {}

    def __init__(self, warm_l2: bool) -> None:
        self.warm = warm_l2
        self.cache = (
            None if warm_l2 else torch.ones(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
        )

    def __call__(self) -> None:
        if self.cache is not None:
            self.cache.max()

    def names(self) -> list[str] | None:
        """None when the trace could not be read (a flush that launched nothing is unreadable)."""
        if self.warm not in Flush._names:
            self()  # warm: lazy initialisation launches nothing the graph will hold
            torch.cuda.synchronize()
            with kernel_trace() as trace:
                self()
            if trace.error or (not self.warm and not trace.ops):
                return None
            Flush._names[self.warm] = [op[2] for op in trace.ops]
        return Flush._names[self.warm]


def _flusher(warm_l2: bool) -> Flush:
    return Flush(warm_l2)


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
    span_note = "" if USE_SPANS else "off"
    windows, empty, spans, probes = [], [], [], clocks.Probe()
    for r, count in enumerate(per_round):
        call = fresh() if r and fresh else fn
        w = sp = None
        if method == "graph":
            try:
                w, e, sp, why = _graph_samples(call, flush, count, probes, spans=not span_note)
                span_note = span_note or why
            except Exception as exc:  # capture-unsafe variant: record why, time it with events
                torch.cuda.synchronize()
                first_line = (str(exc).splitlines() or [""])[0][:160]
                note = f"graph capture failed ({type(exc).__name__}: {first_line})"
                method = "events"  # later rounds too: the same call will not capture either
        if w is None:
            w, e, sp, why = _spin_event_samples(call, flush, count, probes, spans=not span_note)
            span_note = span_note or why
        windows += w
        empty += e
        spans += sp or []
    overhead = float(np.median(empty))
    events = [w - overhead for w in windows]
    if not span_note:  # every round's trace split into its calls
        launch = (float(np.median(events)) - float(np.median(spans))) * 1e3
        return DeviceTime(spans, method, note, probes.summary(), overhead * 1e3, launch, SPANS)
    if span_note != "off":
        why = f"kernel timestamps unusable ({span_note}): event windows instead"
        note = f"{note}; {why}" if note else why
    return DeviceTime(events, method, note, probes.summary(), overhead * 1e3, None, EVENTS)


def measure_copy(n: int) -> dict:
    """A device copy of n bytes (n read, n written), timed with spin-held events: a memcpy captured
    in a graph may run on a copy engine (2.76 TB/s seen on the H200 for 1 GiB, against 4.2 for an
    eager copy). Returns the summary columns plus `gbps` (bytes read + written)."""
    # a generator of its own: a variant whose graph capture failed (Liger's cross entropy calls
    # .item()) can leave the default one mid-capture, and torch then refuses its next draw
    gen = torch.Generator(device="cuda").manual_seed(0)
    src = torch.randint(0, 255, (n,), dtype=torch.uint8, device="cuda", generator=gen)
    dst = torch.empty_like(src)
    summary = measure(lambda: dst.copy_(src), graph=False).summary()
    return {**summary, "gbps": 2 * n / (summary["device_p50_ms"] * 1e-3) / 1e9}


def _graph_samples(
    fn, flush, n: int, probe: clocks.Probe, spans: bool = True
) -> tuple[list[float], list[float], list[float] | None, str]:
    """Event windows, empty event windows, and (when spans) each call's kernel span, all in ms;
    the last item says why the spans are missing."""
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
    names = flush.names() if spans else None
    windows: list[float] = []
    empty: list[float] = []
    replays = math.ceil(n / k)
    with kernel_trace(spans) as trace:
        for _ in range(replays):
            graph.replay()
            probe.read()  # while the replay runs on the GPU
            torch.cuda.synchronize()
            windows += [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]
            empty += [s.elapsed_time(e) for s, e in zip(empty_starts, empty_ends, strict=True)]
    del graph
    if not spans:
        return windows[:n], empty, None, ""
    if trace.error or names is None:
        return windows[:n], empty, None, trace.error or "the flush's own ops were not recorded"
    got, why = call_spans(trace.ops, names, k * replays)
    return windows[:n], empty, (got[:n] if got else None), why


def _spin_event_samples(
    fn, flush, n: int, probe: clocks.Probe, spans: bool = True
) -> tuple[list[float], list[float], list[float] | None, str]:
    """Events around each call, a spin kernel holding the stream while a batch is queued; the
    same four results as _graph_samples."""
    from profkit.measure.hostcost import host_cost_us

    hold_us = 2 * SPIN_BATCH * host_cost_us(fn, calls=5, batches=1)[0] + 100
    names = flush.names() if spans else None
    windows: list[float] = []
    empty: list[float] = []
    batches: list[int] = []
    with kernel_trace(spans) as trace:
        while len(windows) < n:
            b = min(SPIN_BATCH, n - len(windows))
            batches.append(b)
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
    if not spans:
        return windows, empty, None, ""
    if trace.error or names is None:
        return windows, empty, None, trace.error or "the flush's own ops were not recorded"
    size, extra = divmod(len(trace.ops) - len(batches), n)
    if extra or size <= 0:
        return windows, empty, None, f"{len(trace.ops)} GPU ops do not split into {n} calls"
    calls, pos = [], 0
    for b in batches:  # each batch: its spin kernel, then b calls
        calls += trace.ops[pos + 1 : pos + 1 + b * size]
        pos += 1 + b * size
    got, why = call_spans(calls, names, n)
    return windows, empty, got, why

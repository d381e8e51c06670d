"""Step latency: consecutive calls of a step (e.g. a decode step), each one timed, and the tail.

Unlike profkit.measure.case_timing (one call's device time with the host off the critical path),
this times a loop the way a serving loop runs it: steps back to back on one stream, each ended by a
synchronize (the sampled token read back), inputs warm. Per step:
- device time: events around the step on its stream, so it includes the gaps where the GPU waited
  for the host to launch work (what CUDA graphs remove);
- host cost: the CPU time of the call that enqueues the step;
- optional probes: events the step records between its stages (inside a captured graph: external
  events), splitting each step's device time into stages that sum to it.

The statistics are profkit.stats.tail's (plain functions on arrays, read by the analysis half
without torch); the measurement loop here imports torch when it runs.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from profkit.stats.tail import iteration_columns, percentiles

MIN_STEPS = 1000  # per variant: enough for a p99 resting on 10 samples
METHOD = "events"
METHOD_NOTE = (
    "step latency: events around each step on one stream, a synchronize after each step; "
    "includes the GPU's wait for the host's launches"
)


# ---- measurement (torch, imported when it runs) -------------------------------------------------


class HostEvent:
    """torch.cuda.Event's timing interface on the host clock: the CPU path of the loop (tests)."""

    def __init__(self) -> None:
        self.t = 0.0

    def record(self) -> None:
        self.t = time.perf_counter()

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, end: HostEvent) -> float:
        return (end.t - self.t) * 1e3


def new_event(device: str, external: bool = False) -> Any:
    if device == "cpu":
        return HostEvent()
    import torch

    return torch.cuda.Event(enable_timing=True, external=external)


class Probes:
    """Events a step records between its stages through `mark(stage)`, one per stage, declared in
    the order the stages run (a runner may first call its pieces in another order, e.g. while
    capturing them). The same events are recorded again every step (inside a captured graph they
    are external event nodes, recorded at each replay), so they are read after each step's
    synchronize."""

    def __init__(self, stages: Sequence[str], external: bool, device: str = "cuda"):
        self.events = {stage: new_event(device, external) for stage in stages}

    def mark(self, stage: str) -> None:
        self.events[stage].record()

    def read(self, start: Any, end: Any) -> dict[str, float]:
        """Each stage's time, ms: from the previous mark (the step's start event for the first)
        to the stage's own; `rest` from the last mark to the step's end event. They sum to the
        step's device time."""
        out, prev = {}, start
        for stage, ev in self.events.items():
            out[stage] = prev.elapsed_time(ev)
            prev = ev
        out["rest"] = prev.elapsed_time(end)
        return out


@dataclass
class IterationSamples:
    device_ms: np.ndarray
    host_ms: np.ndarray
    loop_ms: float  # wall time per step of the whole loop, synchronizes included
    probes: dict[str, list[float]] = field(default_factory=dict)
    clocks: dict = field(default_factory=dict)


def run_iterations(
    call: Callable[[int], Any],
    steps: int,
    warmup: int = 50,
    probes: Probes | None = None,
    device: str = "cuda",
) -> IterationSamples:
    """Run call(0..warmup-1) untimed, then call(0..steps-1), each step timed and synchronized.
    device="cpu" times on the host clock (the CPU tests' path)."""
    from profkit.measure import clocks

    sync = _synchronizer(device)
    for i in range(warmup):
        call(i)
        sync()
    starts = [new_event(device) for _ in range(steps)]
    ends = [new_event(device) for _ in range(steps)]
    host = np.empty(steps)
    stage_ms: dict[str, list[float]] = {}
    probe = clocks.Probe()
    # as timeit does: a garbage collection landing inside a step is the harness's host noise,
    # not the step's cost (a collection pass takes tens to hundreds of microseconds)
    collecting = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        t_loop = time.perf_counter()
        for i in range(steps):
            starts[i].record()
            t0 = time.perf_counter()
            call(i)
            t1 = time.perf_counter()
            ends[i].record()
            if device != "cpu" and i % 100 == 50:
                probe.read()  # clocks while the step runs on the GPU (its timing unaffected)
            ends[i].synchronize()
            host[i] = (t1 - t0) * 1e3
            if probes is not None:
                for stage, ms in probes.read(starts[i], ends[i]).items():
                    stage_ms.setdefault(stage, []).append(ms)
        loop_ms = (time.perf_counter() - t_loop) * 1e3 / steps
    finally:
        if collecting:
            gc.enable()
    device_ms = np.array([s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)])
    return IterationSamples(device_ms, host, loop_ms, stage_ms, probe.summary())


def _synchronizer(device: str) -> Callable[[], None]:
    if device == "cpu":
        return lambda: None
    import torch

    return torch.cuda.synchronize


def check_output(got: Any, ref: Any, atol: float, rtol: float) -> dict:
    """correct, rel_err, max_abs_err, error: the verdict of profkit.measure.correctness.check."""
    import torch

    got = got.double()
    if got.shape != ref.shape:
        return _verdict(False, None, None, f"shape {tuple(got.shape)} != {tuple(ref.shape)}")
    if not bool(torch.isfinite(got).all()):
        return _verdict(False, None, None, "non-finite or unwritten output")
    diff = (got - ref).abs()
    rel = float(torch.linalg.vector_norm(got - ref) / torch.linalg.vector_norm(ref))
    ok = bool(torch.allclose(got, ref, atol=atol, rtol=rtol))
    why = (
        "" if ok else f"outside tolerance (atol={atol}, rtol={rtol}): max abs err {diff.max():.3g}"
    )
    return _verdict(ok, rel, float(diff.max()), why)


def _verdict(ok: bool, rel: float | None, max_abs: float | None, error: str) -> dict:
    return {"correct": ok, "rel_err": rel, "max_abs_err": max_abs, "error": error}


def case_row(identity: dict, s: IterationSamples) -> dict:
    """A cases.csv row: identity columns, step-latency columns, host and loop cost, clocks. The
    device_* columns stay empty: no single call's device time is measured here."""
    host = percentiles(s.host_ms)
    return {
        **identity,
        **iteration_columns(s.device_ms),
        "step_method": METHOD,
        "step_note": METHOD_NOTE,
        "host_us": host["p50"] * 1e3,
        "host_p95_us": host["p95"] * 1e3,
        "loop_us": s.loop_ms * 1e3,
        **s.clocks,
    }


def samples_frame(case: str, s: IterationSamples, probe_prefix: str = "probe.") -> pd.DataFrame:
    """Raw samples in profkit's long format (case, kind, ms), in step order: device, host, and one
    kind per probe stage."""
    parts = [("device", s.device_ms), ("host", s.host_ms)]
    parts += [(probe_prefix + stage, np.asarray(v)) for stage, v in s.probes.items()]
    return pd.concat(
        [pd.DataFrame({"case": case, "kind": kind, "ms": v}) for kind, v in parts],
        ignore_index=True,
    )


def check_iteration(
    call: Callable[[], Any], reference: Callable[[], Any], rows: Sequence[int], tol: tuple
) -> dict:
    """Run the step, poison what it returned (NaN), run it again and compare the chosen rows with
    the float64 reference: a replayed graph that stopped writing its output fails."""
    import torch

    try:
        out = call()
        if out.is_floating_point():
            out.fill_(float("nan"))
        out = call()
        if out.is_cuda:
            torch.cuda.synchronize()
    except Exception as exc:  # recorded in the case's row, not fatal to the sweep
        return _verdict(False, None, None, f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
    return check_output(out[list(rows)], reference(), *tol)

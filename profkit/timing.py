"""Correctness first, then timing you can trust: warm-up, L2 flush, device events, percentiles.

A variant is checked against the spec's float64 reference on fresh random inputs, with its output
poisoned (NaN) beforehand so unwritten elements fail; only a correct variant is timed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from profkit.spec import KernelSpec, Shape, Variant

FLUSH_BYTES = 256 * 1024 * 1024  # > 4x the H200's 60 MB L2: every repetition starts cold
WARMUP_MS = 25.0
TARGET_MS = 200.0  # timed budget per case; reps = clamp(TARGET_MS / estimate, MIN_REPS, MAX_REPS)
MIN_REPS, MAX_REPS = 30, 2000


@dataclass
class Check:
    correct: bool
    rel_err: float | None
    max_abs_err: float | None
    error: str = ""


@dataclass
class Timing:
    reps: int
    device_p50_ms: float
    device_p95_ms: float
    device_p5_ms: float
    device_iqr_ms: float  # inter-quartile range

    @classmethod
    def from_samples(cls, ms: list[float]) -> Timing:
        p5, p25, p50, p75, p95 = np.percentile(np.asarray(ms), [5, 25, 50, 75, 95])
        return cls(len(ms), float(p50), float(p95), float(p5), float(p75 - p25))


def resolve_callable(variant: Variant, cache: dict[str, Callable]) -> Callable[[dict], Any]:
    """The variant's callable, running its `prepare` (e.g. torch.compile) once per process."""
    if variant.prepare is None:
        return variant.fn
    if variant.name not in cache:
        cache[variant.name] = variant.prepare()
    return cache[variant.name]


def check(
    spec: KernelSpec, fn: Callable, shape: Shape, dtype: str, device: str, seed: int
) -> Check:
    gen = torch.Generator(device=device).manual_seed(seed)
    inputs = spec.make_inputs(shape, dtype, device, gen)
    if "out" in inputs and inputs["out"].is_floating_point():
        inputs["out"].fill_(float("nan"))  # poison: an element the kernel never writes stays NaN
    try:
        out = fn(inputs)
        if device == "cuda":
            torch.cuda.synchronize()
    except Exception as exc:  # a crashing variant is recorded, not fatal to the sweep
        return Check(False, None, None, f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
    ref = spec.reference(inputs)
    got = out.double()
    if got.shape != ref.shape:
        return Check(False, None, None, f"shape {tuple(got.shape)} != reference {tuple(ref.shape)}")
    diff = (got - ref).abs()
    finite = bool(torch.isfinite(got).all())
    max_abs = float(diff.max()) if finite else float("nan")
    rel = (
        float(torch.linalg.vector_norm(got - ref) / torch.linalg.vector_norm(ref))
        if finite
        else None
    )
    atol, rtol = spec.tolerances[dtype]
    ok = finite and bool(torch.allclose(got, ref, atol=atol, rtol=rtol))
    why = (
        ""
        if ok
        else (
            "non-finite or unwritten output"
            if not finite
            else f"outside tolerance (atol={atol}, rtol={rtol}): max abs err {max_abs:.3g}"
        )
    )
    return Check(ok, rel, max_abs if finite else None, why)


@contextlib.contextmanager
def nvtx_range(name: str) -> Iterator[None]:
    """A push/pop range in profkit's own NVTX domain (ncu filter: regex:profkit@.+/)."""
    import nvtx

    with nvtx.annotate(name, domain="profkit"):
        yield


def bench(
    fn: Callable[[], Any], *, range_name: str | None = None, flush_bytes: int = FLUSH_BYTES
) -> Timing:
    """Device-event time of fn, L2 flushed before each repetition (outside the events)."""
    cache = torch.empty(flush_bytes, dtype=torch.int8, device="cuda")
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        cache.zero_()
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate = max(start.elapsed_time(end) / 5, 1e-3)  # includes the flush: an upper bound
    for _ in range(max(1, int(WARMUP_MS / estimate))):
        fn()
    reps = int(min(MAX_REPS, max(MIN_REPS, TARGET_MS / estimate)))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        cache.zero_()
        starts[i].record()
        with nvtx_range(range_name) if range_name else contextlib.nullcontext():
            fn()
        ends[i].record()
    torch.cuda.synchronize()
    return Timing.from_samples([s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)])


def time_case(
    spec: KernelSpec,
    fn: Callable,
    shape: Shape,
    dtype: str,
    seed: int,
    range_name: str | None = None,
) -> Timing:
    gen = torch.Generator(device="cuda").manual_seed(seed)
    inputs = spec.make_inputs(shape, dtype, "cuda", gen)
    return bench(lambda: fn(inputs), range_name=range_name)

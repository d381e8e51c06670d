"""Correctness first, then three timings, each named for what it measures.

A variant is checked against the spec's float64 reference on fresh random inputs, with its output
poisoned (NaN) beforehand so unwritten elements fail; only a correct variant is timed (`devicetime`
measures the GPU time of one call, `hostcost` what the CPU spends launching it and what an eager
Python loop sustains).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from profkit.spec import KernelSpec, Shape, Variant


@dataclass
class Check:
    correct: bool
    rel_err: float | None
    max_abs_err: float | None
    error: str = ""


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
    try:
        inputs = spec.make_inputs(shape, dtype, device, gen)
    except Exception as exc:  # the spec's own code: every variant of this case fails with it
        return Check(False, None, None, f"make_inputs raised {_one_line(exc)}")
    if "out" in inputs and inputs["out"].is_floating_point():
        inputs["out"].fill_(float("nan"))  # poison: an element the kernel never writes stays NaN
    # an integer `out` keeps the spec's fill: kernels accumulate into it (atomic histograms start
    # from zeros), and the exact check fails an unwritten element wherever the fill is not the
    # answer
    try:
        out = fn(inputs)
        if device == "cuda":
            torch.cuda.synchronize()
    except Exception as exc:  # a crashing variant is recorded, not fatal to the sweep
        return Check(False, None, None, _one_line(exc))
    try:
        ref = spec.reference(inputs)
    except Exception as exc:
        return Check(False, None, None, f"the reference raised {_one_line(exc)}")
    # several outputs (e.g. a fused residual add's sum and its norm) come as a tuple, the
    # reference's likewise, and are checked together, in order
    if isinstance(out, tuple) or isinstance(ref, tuple):
        outs, refs = (t if isinstance(t, tuple) else (t,) for t in (out, ref))
        if len(outs) != len(refs):
            return Check(False, None, None, f"{len(outs)} output(s), the reference has {len(refs)}")
        for o, r in zip(outs, refs, strict=True):
            if not isinstance(o, torch.Tensor) or o.shape != r.shape:
                what = tuple(o.shape) if isinstance(o, torch.Tensor) else type(o).__name__
                return Check(False, None, None, f"output {what} != reference {tuple(r.shape)}")
        out, ref = (torch.cat([t.reshape(-1) for t in ts]) for ts in (outs, refs))
    if not isinstance(out, torch.Tensor):
        return Check(False, None, None, f"the variant returned {type(out).__name__}, not a tensor")
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
    if _is_integer(out):
        # integer math has one right answer: exact, whatever tolerance the spec lists
        wrong = int((got != ref).sum())
        ok = wrong == 0
        why = (
            ""
            if ok
            else f"outside tolerance (exact, integer output): {wrong} of {ref.numel()} differ"
        )
        why += f", max abs err {max_abs:.3g}" if wrong else ""
        return Check(ok, rel, max_abs, why)
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


def _is_integer(t: Any) -> bool:
    """An integer (or bool) tensor: its values compare exactly. Values past 2**53 would lose
    exactness in the float64 comparison; no spec produces them."""
    return isinstance(t, torch.Tensor) and not t.is_floating_point() and not t.is_complex()


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]


@contextlib.contextmanager
def nvtx_range(name: str) -> Iterator[None]:
    """A push/pop range in profkit's own NVTX domain (ncu filter: regex:profkit@.+/)."""
    import nvtx

    with nvtx.annotate(name, domain="profkit"):
        yield


@dataclass
class CaseTiming:
    """A case's three figures: its summary columns, and every raw sample (kind, ms)."""

    columns: dict
    samples: list[tuple[str, float]]


def measure_call(
    fn: Callable[[], Any],
    *,
    warm_l2: bool = False,
    fresh: Callable[[], Callable[[], Any]] | None = None,
) -> CaseTiming:
    """Device time (graph replay, L2 flushed unless warm_l2; later rounds on fresh() calls when
    given), host cost and eager-loop time."""
    from profkit import devicetime, hostcost

    device = devicetime.measure(fn, warm_l2=warm_l2, fresh=fresh)
    columns = device.summary()
    host = hostcost.host_cost_us(fn)
    host_us = hostcost.median(host)
    loop = hostcost.loop_us(fn, columns["device_p50_ms"], host_us)
    columns.update(host_us=host_us, loop_us=hostcost.median(loop))
    samples = [("device", ms) for ms in device.samples_ms]
    samples += [("host", us / 1e3) for us in host] + [("loop", us / 1e3) for us in loop]
    return CaseTiming(columns, samples)


def time_case(
    spec: KernelSpec, fn: Callable, shape: Shape, dtype: str, seed: int, warm_l2: bool = False
) -> CaseTiming:
    gen = torch.Generator(device="cuda").manual_seed(seed)
    held = []  # every round's inputs stay allocated, so each round's sit at new addresses

    def fresh() -> Callable[[], Any]:
        held.append(spec.make_inputs(shape, dtype, "cuda", gen))
        inputs = held[-1]
        return lambda: fn(inputs)

    return measure_call(fresh(), warm_l2=warm_l2, fresh=fresh)


def copy_gbps(nbytes: int, cache: dict[int, float]) -> float:
    """GB/s of a device copy moving the same bytes as the case (read + write), measured once per
    size: the DRAM roof depends on the size (a 128 MB copy reaches ~85% of a 1 GiB one's rate)."""
    if nbytes not in cache:
        from profkit import devicetime

        cache[nbytes] = devicetime.measure_copy(max(nbytes // 2, 1))["gbps"]
    return cache[nbytes]

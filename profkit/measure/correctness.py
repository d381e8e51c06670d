"""Correctness, checked before anything is timed.

A variant is checked against the spec's float64 reference on fresh random inputs, the reference
computed first on its own copy of them (so a variant may work in place), with the variant's output
poisoned (NaN) beforehand so unwritten elements fail; only a correct variant is timed
(profkit.measure.case_timing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from profkit.spec import KernelSpec, Shape


@dataclass
class Check:
    correct: bool
    rel_err: float | None
    max_abs_err: float | None
    error: str = ""


def check(
    spec: KernelSpec, fn: Callable, shape: Shape, dtype: str, device: str, seed: int
) -> Check:
    gen = torch.Generator(device=device).manual_seed(seed)
    try:
        inputs = spec.make_inputs(shape, dtype, device, gen)
    except Exception as exc:  # the spec's own code: every variant of this case fails with it
        return Check(False, None, None, f"make_inputs raised {_one_line(exc)}")
    # the reference first, on its own copy of the pristine inputs: a variant may work in place
    # (legal), and one that overwrites its inputs must not move the answer it is checked against
    try:
        ref = spec.reference(_copy(inputs))
    except Exception as exc:
        return Check(False, None, None, f"the reference raised {_one_line(exc)}")
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


def _copy(inputs: dict[str, Any]) -> dict[str, Any]:
    """The inputs with every tensor cloned (strides kept: a transposed operand stays one)."""
    return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def _is_integer(t: Any) -> bool:
    """An integer (or bool) tensor: its values compare exactly. Values past 2**53 would lose
    exactness in the float64 comparison; no spec produces them."""
    return isinstance(t, torch.Tensor) and not t.is_floating_point() and not t.is_complex()


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]

"""Pathology zoo, atomics: a histogram of 2^22 values into 4 bins, contended and privatized.

The histogram accumulates into `out` (zeros from make_inputs), as a counting kernel does into a
zeroed buffer: the check sees the first call; later timed calls keep adding, which costs the same.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from profkit.spec import KernelSpec, Variant

BINS = 4


@triton.jit
def _hist_contended_kernel(X, H, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    # one global atomic per element, all on 4 addresses: the L2 serializes them per address
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    b = tl.minimum((tl.load(X + offs, mask=ok, other=0.0) * BINS).to(tl.int32), BINS - 1)
    tl.atomic_add(H + b, tl.full([BLOCK], 1, tl.int32), mask=ok, sem="relaxed")


@triton.jit
def _hist_private_kernel(X, H, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    # the same counts summed per program in registers, then one atomic per bin per program
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    b = tl.minimum((tl.load(X + offs, mask=ok, other=0.0) * BINS).to(tl.int32), BINS - 1)
    for k in tl.static_range(BINS):
        tl.atomic_add(H + k, tl.sum(((b == k) & ok).to(tl.int32)), sem="relaxed")


def contended(inputs: dict) -> torch.Tensor:
    x, h = inputs["x"], inputs["out"]
    n = x.numel()
    _hist_contended_kernel[(triton.cdiv(n, 1024),)](x, h, n, BINS=BINS, BLOCK=1024)
    return h


def privatized(inputs: dict) -> torch.Tensor:
    x, h = inputs["x"], inputs["out"]
    n = x.numel()
    _hist_private_kernel[(triton.cdiv(n, 4096),)](x, h, n, BINS=BINS, BLOCK=4096, num_warps=8)
    return h


def hist_inputs(shape, dtype, device, gen) -> dict:
    x = torch.rand(shape, generator=gen, device=device).to(getattr(torch, dtype))
    return {"x": x, "out": torch.zeros(BINS, dtype=torch.int32, device=device)}


def hist_reference(inputs: dict) -> torch.Tensor:
    b = (inputs["x"].double() * BINS).long().clamp(max=BINS - 1)
    return torch.bincount(b, minlength=BINS).double()


ZOO_ATOMICS = KernelSpec(
    name="zoo_atomics",
    description="zoo: a 4-bin histogram, one global atomic per element, and privatized",
    variants=(
        Variant("contended", contended, description="Triton, 2^22 atomics on 4 addresses"),
        Variant("privatized", privatized, description="Triton, per-program counts, 4 atomics"),
    ),
    make_inputs=hist_inputs,
    reference=hist_reference,
    dtypes=("float32",),
    # 2^22 values (16 MB): 4M atomics on 4 addresses of one sector, one L2 slice serializing
    # them (about 1-3 ms, if ~1-4 per clock); privatized: 4096 atomics, a ~5 us read
    shapes=((1 << 22,),),
    tolerances={"float32": (0.0, 0.0)},
    bytes_moved=lambda s, size: s[0] * size + BINS * 4,
    flops=lambda s: 0,
    interpret_shapes=((5000,), (64,)),
)


# --- the atomics' memory ordering: Triton's default (acq_rel) against sem="relaxed" -----------

ORDER_BINS = 1 << 20  # 4 MB of fp32 bins: 16 values each, no address contended


@triton.jit
def _accumulate_kernel(X, OUT, n, BINS: tl.constexpr, BLOCK: tl.constexpr, RELAXED: tl.constexpr):
    # out[i % BINS] += x[i]: consecutive lanes hit consecutive bins, each bin 16 times in all
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    x = tl.load(X + offs, mask=ok, other=0.0)
    if RELAXED:
        tl.atomic_add(OUT + offs % BINS, x, mask=ok, sem="relaxed")
    else:  # Triton's default semantics, acq_rel: each atomic orders memory around it (a fence)
        tl.atomic_add(OUT + offs % BINS, x, mask=ok)


def _accumulate(relaxed: bool):
    def run(inputs: dict) -> torch.Tensor:
        x, out = inputs["x"], inputs["acc"]
        n = x.numel()
        _accumulate_kernel[(triton.cdiv(n, 1024),)](
            x, out, n, BINS=out.numel(), BLOCK=1024, RELAXED=relaxed
        )
        return out

    return run


def accumulate_inputs(shape, dtype, device, gen) -> dict:
    x = torch.rand(shape, generator=gen, device=device).to(getattr(torch, dtype))
    bins = min(ORDER_BINS, shape[0])
    # "acc", not "out": profkit poisons a floating `out` with NaN, and these add into it
    return {"x": x, "acc": torch.zeros(bins, dtype=x.dtype, device=device)}


def accumulate_reference(inputs: dict) -> torch.Tensor:
    bins = inputs["acc"].numel()
    return inputs["x"].double().view(-1, bins).sum(0)


ZOO_ATOMIC_ORDER = KernelSpec(
    name="zoo_atomic_order",
    description="zoo: out[i % 2^20] += x[i] by tl.atomic_add, default acq_rel and relaxed",
    variants=(
        Variant("acq_rel", _accumulate(False), description="Triton atomic_add, default sem"),
        Variant("relaxed", _accumulate(True), description="Triton atomic_add, sem='relaxed'"),
    ),
    make_inputs=accumulate_inputs,
    reference=accumulate_reference,
    dtypes=("float32",),
    # 2^24 atomics on 2^20 addresses: uncontended; relaxed they are fire-and-forget reductions
    # (~30-60 us), acq_rel each waits for a memory barrier
    shapes=((1 << 24,),),
    tolerances={"float32": (1e-5, 1e-5)},
    bytes_moved=lambda s, size: s[0] * size + 2 * min(ORDER_BINS, s[0]) * size,
    flops=lambda s: s[0],
    interpret_shapes=((4096,), (64,)),
)

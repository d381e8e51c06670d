"""Pathology zoo, launches (issue 30): programs too small to amortize their launch, and a case of
two launches whose time is nearly all in the second.

- zoo_tiny_programs: y = 2x + 1 over 2^26 fp32. `tiny`: 32 elements a program on one warp, 2^21
  programs: the SM holds at most 32 resident blocks (32 warps, 50% theoretical occupancy), and
  blocks that each live for one load and one store retire faster than the block scheduler
  replaces them, so achieved occupancy falls far under theoretical. `large`: 4096 elements a
  program on 4 warps (16384 programs), the same stream at the DRAM roof.
- zoo_scatter: out.zero_() by a Triton memset of 16 MB (~3% of the time), then a Triton scatter-add
  of 2^25 values at random indices into those 2^22 bins (~97%): the case's step is the scatter's.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from profkit.spec import KernelSpec, Variant

# --- programs too small: 32 elements on one warp, 2 million blocks; twin 4096 on 4 warps -------


@triton.jit
def _affine_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    tl.store(Y + offs, tl.load(X + offs, mask=ok) * 2.0 + 1.0, mask=ok)


def _affine(block: int, warps: int):
    def run(inputs: dict) -> torch.Tensor:
        x, y = inputs["x"], inputs["out"]
        n = x.numel()
        _affine_kernel[(triton.cdiv(n, block),)](x, y, n, BLOCK=block, num_warps=warps)
        return y

    return run


def flat_inputs(shape, dtype, device, gen) -> dict:
    x = torch.randn(shape, generator=gen, device=device).to(getattr(torch, dtype))
    return {"x": x, "out": torch.empty_like(x)}


ZOO_TINY_PROGRAMS = KernelSpec(
    name="zoo_tiny_programs",
    description="zoo: y = 2x + 1, 32-element programs on one warp (2^21 blocks) and 4096 on 4",
    variants=(
        Variant("tiny", _affine(32, 1), description="Triton, 32 elements, 1 warp, 2^21 programs"),
        Variant("large", _affine(4096, 4), description="Triton, 4096 elements, 4 warps"),
    ),
    make_inputs=flat_inputs,
    reference=lambda i: 2.0 * i["x"].double() + 1.0,
    dtypes=("float32",),
    # 512 MB moved: ~0.11 ms at the copy roof (large); tiny is held by the block launch rate
    shapes=((1 << 26,),),
    tolerances={"float32": (1e-6, 1e-6)},  # 2x + 1 rounds once in fp32
    bytes_moved=lambda s, size: 2 * s[0] * size,
    flops=lambda s: 2 * s[0],
    interpret_shapes=((100,), (4096 + 7,)),
)


# --- two launches: a 16 MB memset, then a random scatter-add of 2^25 values into it ------------

BINS = 1 << 22  # 16 MB of fp32 bins


@triton.jit
def _zero_kernel(Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.zeros([BLOCK], tl.float32), mask=offs < n)


@triton.jit
def _scatter_add_kernel(V, IDX, Y, n, BLOCK: tl.constexpr):
    # one relaxed atomic per value at a random bin: each lands in its own 32-byte sector
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    i = tl.load(IDX + offs, mask=ok, other=0)
    tl.atomic_add(Y + i, tl.load(V + offs, mask=ok, other=0.0), mask=ok, sem="relaxed")


def scatter(inputs: dict) -> torch.Tensor:
    v, idx, y = inputs["v"], inputs["idx"], inputs["out"]
    bins, n = y.numel(), v.numel()
    _zero_kernel[(triton.cdiv(bins, 4096),)](y, bins, BLOCK=4096, num_warps=4)
    _scatter_add_kernel[(triton.cdiv(n, 1024),)](v, idx, y, n, BLOCK=1024, num_warps=4)
    return y


def scatter_inputs(shape, dtype, device, gen) -> dict:
    n, bins = shape
    v = torch.rand(n, generator=gen, device=device).to(getattr(torch, dtype))
    idx = torch.randint(0, bins, (n,), generator=gen, device=device, dtype=torch.int32)
    return {"v": v, "idx": idx, "out": torch.empty(bins, dtype=v.dtype, device=device)}


def scatter_reference(inputs: dict) -> torch.Tensor:
    out = torch.zeros(inputs["out"].numel(), dtype=torch.float64, device=inputs["v"].device)
    return out.index_add_(0, inputs["idx"].long(), inputs["v"].double())


ZOO_SCATTER = KernelSpec(
    name="zoo_scatter",
    description="zoo: a Triton memset of 2^22 bins (~3%), then a random scatter-add of 2^25 values",
    variants=(Variant("memset_scatter", scatter, description="Triton: zero, then atomic_add"),),
    make_inputs=scatter_inputs,
    reference=scatter_reference,
    dtypes=("float32",),
    # the memset writes 16 MB (~6 us); the scatter reads 256 MB of values and indices and issues
    # 2^25 random atomics (~150-250 us): the memset is a few percent of the case
    shapes=((1 << 25, BINS),),
    # 8 values a bin on average, summed in any order
    tolerances={"float32": (1e-5, 1e-5)},
    bytes_moved=lambda s, size: s[0] * (size + 4) + s[1] * size,
    flops=lambda s: s[0],
    interpret_shapes=((5000, 300), (64, 4096)),
)

"""Pathology zoo, launch shape: a tail wave, a grid too small for the SMs, and a host-bound op."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from profkit.spec import KernelSpec, Variant

# --- wave quantization: 133 tiles of 1 block/SM work on 132 SMs; its twin, 132 tiles ----------

TILE = 32768  # fp32 per program: 32 per thread over 32 warps


@triton.jit
def _tile_fma_kernel(X, Y, iters, TILE: tl.constexpr):
    # 1024 threads x 32 independent FMA chains: more than 32 registers per thread, so only one
    # block fits an SM (65536 registers); the grid's waves are whole only at multiples of 132
    offs = tl.program_id(0) * TILE + tl.arange(0, TILE)
    x = tl.load(X + offs)
    for _ in range(iters):
        x = x * 0.999 + 0.001
    tl.store(Y + offs, x)


def tiles(inputs: dict) -> torch.Tensor:
    x, y = inputs["x"], inputs["out"]
    _tile_fma_kernel[(x.numel() // TILE,)](x, y, inputs["iters"], TILE=TILE, num_warps=32)
    return y


def tile_inputs(shape, dtype, device, gen) -> dict:
    n_tiles, iters = shape
    x = torch.randn(n_tiles * TILE, generator=gen, device=device).to(getattr(torch, dtype))
    return {"x": x, "iters": iters, "out": torch.empty_like(x)}


def _f32(v: float) -> float:
    return float(torch.tensor(v, dtype=torch.float32))  # a Triton float literal is fp32


def tile_reference(inputs: dict) -> torch.Tensor:
    x, a, b = inputs["x"].double(), _f32(0.999), _f32(0.001)
    for _ in range(inputs["iters"]):
        x = x * a + b
    return x


ZOO_TAIL = KernelSpec(
    name="zoo_tail",
    description="zoo: FMA-heavy tiles at 1 block/SM: 133 tiles (a 1-block tail wave) and 132",
    variants=(Variant("tiles", tiles, description="Triton, 32 warps, 32768 fp32 per tile"),),
    make_inputs=tile_inputs,
    reference=tile_reference,
    dtypes=("float32",),
    # a tile is 32768 x 1024 FMA = 256 K cycles of one SM's FMA pipe, ~130 us: 132 tiles take one
    # wave, 133 take two (~265 us, the second on 1 SM)
    shapes=((133, 1024), (132, 1024)),
    # 1024 dependent fp32 FMAs round 1024 times: 3.8e-5 from the float64 reference on the H200
    tolerances={"float32": (1e-4, 1e-4)},
    bytes_moved=lambda s, size: 2 * s[0] * TILE * size,
    flops=lambda s: 2 * s[0] * TILE * s[1],
    interpret_shapes=((2, 3), (1, 5)),
)


# --- a grid too small: 16 programs sum 16 rows of 8 MB ------------------------------------------


@triton.jit
def _row_sum_kernel(X, Y, n_cols, BLOCK: tl.constexpr):
    # one program per row: 16 programs use 16 of 132 SMs, each streaming 8 MB alone
    row = tl.program_id(0).to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for c in range(0, n_cols, BLOCK):
        acc += tl.load(X + row + c + cols, mask=c + cols < n_cols, other=0.0)
    tl.store(Y + tl.program_id(0), tl.sum(acc))


def row_sums(inputs: dict) -> torch.Tensor:
    x, y = inputs["x"], inputs["out"]
    rows, cols = x.shape
    _row_sum_kernel[(rows,)](x, y, cols, BLOCK=4096, num_warps=8)
    return y


def row_inputs(shape, dtype, device, gen) -> dict:
    x = torch.randn(shape, generator=gen, device=device).to(getattr(torch, dtype))
    return {"x": x, "out": torch.empty(shape[0], device=device, dtype=x.dtype)}


ZOO_SMALL_GRID = KernelSpec(
    name="zoo_small_grid",
    description="zoo: 16 row sums of 2^21 fp32, one program per row (16 of 132 SMs)",
    variants=(Variant("per_row", row_sums, description="Triton, 16 programs, 8 warps each"),),
    make_inputs=row_inputs,
    reference=lambda i: i["x"].double().sum(-1),
    dtypes=("float32",),
    # 128 MB over 16 SMs at ~100-200 GB/s each: ~40-80 us
    shapes=((16, 1 << 21),),
    tolerances={"float32": (1e-2, 1e-4)},
    bytes_moved=lambda s, size: s[0] * s[1] * size + s[0] * size,
    flops=lambda s: s[0] * s[1],
    interpret_shapes=((3, 5000), (2, 64)),
)


# --- host-bound: y = 2x over 256 elements ------------------------------------------------------


@triton.jit
def _tiny_scale_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < n) * 2.0, mask=offs < n)


def tiny_scale(inputs: dict) -> torch.Tensor:
    x, y = inputs["x"], inputs["out"]
    n = x.numel()
    _tiny_scale_kernel[(1,)](x, y, n, BLOCK=triton.next_power_of_2(n))
    return y


def tiny_inputs(shape, dtype, device, gen) -> dict:
    x = torch.randn(shape, generator=gen, device=device).to(getattr(torch, dtype))
    return {"x": x, "out": torch.empty_like(x)}


ZOO_HOST = KernelSpec(
    name="zoo_host",
    description="zoo: y = 2x over 256 elements: a launch's host cost dwarfs the GPU's ~2 us",
    variants=(Variant("tiny", tiny_scale, description="Triton, one program"),),
    make_inputs=tiny_inputs,
    reference=lambda i: 2.0 * i["x"].double(),
    dtypes=("float32",),
    shapes=((256,),),
    tolerances={"float32": (0.0, 0.0)},
    bytes_moved=lambda s, size: 2 * s[0] * size,
    flops=lambda s: s[0],
    interpret_shapes=((256,), (100,)),
)

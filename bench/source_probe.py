"""Two small KernelSpecs to check `profkit capture --source` on the H200 (issue 20, part 4).

The same Triton kernels as the probe report in tests/fixtures/fx_source (wide_row, hist), as specs
profkit can capture, each with a healthy twin:

- src_spill: softmax(x) * x over 8192-wide fp32 rows. `one_warp` holds a whole row in one warp
  (256 values per thread): registers spill, and the hot lines carry local-memory instructions.
  `eight_warps` is the same code with 8 warps (32 values per thread): no spills expected.
- src_hist: a histogram of 2^24 whole numbers (stored as float32) by tl.atomic_add. `bins4`: 4
  bins, so every atomic of a wave hits the same 4 addresses (contention at L2); `bins1m`: 2^20
  bins, spread out.

Expected before any capture (written 2026-12-01): the source pass names, for one_warp, a line of
wide_row's body with long-scoreboard stalls and local-memory (spill) instructions; for bins4, the
tl.atomic_add line with most long-scoreboard (and membar) stalls; eight_warps has no spill
instructions. Run: OUT=/some/dir bash bench/source_pass.sh
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from profkit.spec import KernelSpec, Variant


@triton.jit
def _wide_row(X, Y, N: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + row * N + offs)
    m = tl.max(x, 0)
    e = tl.exp(x - m)
    s = tl.sum(e, 0)
    y = e / s
    tl.store(Y + row * N + offs, y * x)


def _rows(inputs: dict, warps: int) -> torch.Tensor:
    x, y = inputs["x"], inputs["out"]
    m, n = x.shape
    _wide_row[(m,)](x, y, N=n, BLOCK=triton.next_power_of_2(n), num_warps=warps)
    return y


def _row_inputs(shape, dtype: str, device: str, generator: torch.Generator) -> dict:
    x = torch.randn(shape, generator=generator, device=device).to(getattr(torch, dtype))
    return {"x": x, "out": torch.empty_like(x)}


SRC_SPILL = KernelSpec(
    name="src_spill",
    description="softmax(x) * x per row: one warp per 8192-wide row spills; eight warps do not",
    variants=(
        Variant("one_warp", lambda i: _rows(i, 1), description="Triton, num_warps=1 (spills)"),
        Variant("eight_warps", lambda i: _rows(i, 8), description="Triton, num_warps=8"),
        Variant(
            "torch",
            lambda i: torch.softmax(i["x"], -1) * i["x"],
            baseline=True,
            description="torch.softmax then a multiply",
        ),
    ),
    make_inputs=_row_inputs,
    reference=lambda i: torch.softmax(i["x"].double(), -1) * i["x"].double(),
    dtypes=("float32",),
    shapes=((2048, 8192),),  # a power-of-2 row: BLOCK == N, no masks
    tolerances={"float32": (1e-5, 1e-4)},
    bytes_moved=lambda s, size: 2 * s[0] * s[1] * size,
    flops=lambda s: 5 * s[0] * s[1],
    interpret_shapes=((4, 64),),
)


@triton.jit
def _hist(X, H, n, NB: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n, other=0).to(tl.int32)
    tl.atomic_add(H + (x % NB), 1, mask=offs < n)


def _histogram(inputs: dict, bins: int) -> torch.Tensor:
    x = inputs["x"]
    inputs["bins"] = bins  # read by the reference, which runs after the call
    h = torch.zeros(bins, device=x.device, dtype=torch.int32)
    n = x.numel()
    _hist[(triton.cdiv(n, 1024),)](x, h, n, NB=bins, BLOCK=1024)
    return h


def _hist_inputs(shape, dtype: str, device: str, generator: torch.Generator) -> dict:
    # whole numbers below 2^20, stored as the spec's float dtype (exact in float32)
    (n,) = shape
    x = torch.randint(0, 1 << 20, (n,), generator=generator, device=device)
    return {"x": x.to(getattr(torch, dtype))}


SRC_HIST = KernelSpec(
    name="src_hist",
    description="a histogram by atomics: 4 bins (contended) against 2^20 bins (spread)",
    variants=(
        Variant("bins4", lambda i: _histogram(i, 4), description="Triton atomics, 4 bins"),
        Variant(
            "bins1m", lambda i: _histogram(i, 1 << 20), description="Triton atomics, 2^20 bins"
        ),
    ),
    make_inputs=_hist_inputs,
    reference=lambda i: torch.bincount(i["x"].long() % i["bins"], minlength=i["bins"]).double(),
    dtypes=("float32",),
    shapes=((1 << 24,),),
    tolerances={"float32": (0.0, 0.0)},  # counts: exact
    bytes_moved=lambda s, size: s[0] * size,
    flops=lambda s: 0,
    interpret_shapes=((4096,),),
)

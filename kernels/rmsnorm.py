"""RMSNorm: y = x / sqrt(mean(x^2) + eps) * w, row-wise over the last dimension.

The lab's fused Triton kernel against three baselines: the classic unfused eager PyTorch code
(upcast, pow, mean, rsqrt, multiply, weight, cast back), torch.nn.functional.rms_norm, and
torch.compile of the eager code. Minimum traffic: read x and w once, write y once.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from profkit.compiled import compile_per_shape
from profkit.spec import KernelSpec, Variant

EPS = 1e-6


@triton.jit
def _rmsnorm_kernel(
    X,
    W,
    Y,
    n_rows,
    n_cols,
    stride_x,
    stride_y,
    eps,
    BLOCK_N: tl.constexpr,
    ROWS: tl.constexpr,
    W_EARLY: tl.constexpr,
):
    # Each program normalizes ROWS whole rows held in registers: x is read from DRAM once and y
    # written once, which is the whole fusion win over the eager chain.
    pid = tl.program_id(0)
    first = pid * ROWS
    # one 64-bit base per program, 32-bit offsets inside it: per-element int64 address math costs
    # registers, and registers capped this kernel's occupancy at 50% (ncu, probe run a)
    x_base = X + first.to(tl.int64) * stride_x
    y_base = Y + first.to(tl.int64) * stride_y
    rows = tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    col_ok = cols < n_cols
    mask = ((first + rows) < n_rows)[:, None] & col_ok[None, :]
    # x is streamed once: evict it first so w (reused by every program) stays in L2. x stays in
    # its own precision between the reduction and the output: values live across the reduction
    # cost registers, and at 40 registers this kernel's occupancy was capped at 75% where
    # torch.compile's 23-25 allowed 100% (run 83a4).
    if W_EARLY:
        # v3: w's loads issued with x's (first in the PTX; ptxas still places them after the
        # first warp-shuffle level, but before the two barriers where v2 had them: NOTES), held
        # in the input dtype: half the registers of fp32 in fp16/bf16
        w = tl.load(W + cols, mask=col_ok, other=0.0, eviction_policy="evict_last")
    x = tl.load(
        x_base + rows[:, None] * stride_x + cols[None, :],
        mask=mask,
        other=0.0,
        eviction_policy="evict_first",
    )
    xf = x.to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(xf * xf, axis=1) / n_cols + eps)
    if not W_EARLY:  # v2: w loaded after the reduction
        w = tl.load(W + cols, mask=col_ok, other=0.0, eviction_policy="evict_last").to(tl.float32)
    y = x.to(tl.float32) * rstd[:, None] * w.to(tl.float32)[None, :]
    tl.store(y_base + rows[:, None] * stride_y + cols[None, :], y.to(Y.dtype.element_ty), mask=mask)


def launch_config(n_rows: int, n_cols: int, itemsize: int) -> tuple[int, int, int]:
    """(BLOCK_N, ROWS, num_warps) for a shape; the reasons are in kernels/NOTES.md.

    - BLOCK_N covers a whole row (rows up to 16384 fit in registers at 16 warps), so x is read once.
    - ROWS packs several short rows into one program so each program still moves ~16 KB: short
      rows alone give tiny programs whose fixed cost (weight load, reduction) dominates. Only when
      there are enough rows to keep every SM busy (>= 4 programs per SM on 132 SMs).
    - num_warps grows with the elements per program so each thread holds at most 16-32 values
      (fp32 registers): more per thread caps occupancy by registers.
    """
    block_n = triton.next_power_of_2(n_cols)
    rows = 1
    while block_n * rows * itemsize < 16384 and n_rows >= rows * 2 * 132 * 4:
        rows *= 2
    elems = block_n * rows
    # ~16 values per thread: fp32 rows of 4096 at 4 warps held 32 each and needed 79 registers
    # (occupancy capped at 37.5%, run 83a4). 16 warps is the cap: 32 lost 25-30% at 8192-16384
    # elements in probe run a, and 16 beat 8 by 1-4% from 8192 elements on.
    num_warps = min(16, max(4, elems // 512))
    return block_n, rows, num_warps


def rmsnorm_triton(
    inputs: dict, config: tuple[int, int, int] | None = None, w_early: bool = True
) -> torch.Tensor:
    x, w, out = inputs["x"], inputs["w"], inputs["out"]
    x2, y2 = x.reshape(-1, x.shape[-1]), out.reshape(-1, x.shape[-1])
    n_rows, n_cols = x2.shape
    block_n, rows, num_warps = config or launch_config(n_rows, n_cols, x.element_size())
    _rmsnorm_kernel[(triton.cdiv(n_rows, rows),)](
        x2,
        w,
        y2,
        n_rows,
        n_cols,
        x2.stride(0),
        y2.stride(0),
        EPS,
        BLOCK_N=block_n,
        ROWS=rows,
        W_EARLY=w_early,
        num_warps=num_warps,
    )
    return out


def rmsnorm_triton_v2(inputs: dict) -> torch.Tensor:
    """The previous version (w loaded after the reduction), kept for side-by-side timing."""
    return rmsnorm_triton(inputs, w_early=False)


def rmsnorm_eager(inputs: dict) -> torch.Tensor:
    """The classic reference code (as in Llama's RMSNorm): every step is its own kernel."""
    x, w = inputs["x"], inputs["w"]
    h = x.to(torch.float32)
    variance = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(variance + EPS)
    return w * h.to(x.dtype)


def rmsnorm_native(inputs: dict) -> torch.Tensor:
    return F.rms_norm(inputs["x"], (inputs["x"].shape[-1],), inputs["w"], EPS)


def _compiled() -> callable:
    return compile_per_shape(rmsnorm_eager)


def make_inputs(shape, dtype: str, device: str, generator: torch.Generator) -> dict:
    dt = getattr(torch, dtype)
    x = torch.randn(shape, generator=generator, device=device, dtype=torch.float32).to(dt)
    w = (1 + 0.5 * torch.randn(shape[-1], generator=generator, device=device)).to(dt)
    return {"x": x, "w": w, "out": torch.empty_like(x)}


def reference(inputs: dict) -> torch.Tensor:
    x, w = inputs["x"].double(), inputs["w"].double()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w


SPEC = KernelSpec(
    name="rmsnorm",
    description="fused RMSNorm over the last dimension (Llama-style, eps=1e-6)",
    variants=(
        Variant(
            "triton",
            rmsnorm_triton,
            description="fused Triton kernel, whole rows in registers, w loaded with x (v3)",
        ),
        Variant("eager", rmsnorm_eager, baseline=True, description="unfused eager PyTorch"),
        Variant(
            "native", rmsnorm_native, baseline=True, description="torch.nn.functional.rms_norm"
        ),
        Variant(
            "compile",
            rmsnorm_eager,
            baseline=True,
            prepare=_compiled,
            description="torch.compile of the eager code",
        ),
        Variant(
            "triton_v2",
            rmsnorm_triton_v2,
            description="v2 of the fused kernel: w loaded after the reduction",
        ),
    ),
    make_inputs=make_inputs,
    reference=reference,
    dtypes=("float16", "bfloat16", "float32"),
    # decode-like (one to a few rows) and prefill-like shapes; hidden sizes 1024..16384
    shapes=(
        (1, 4096),
        (16, 8192),
        (32, 16384),
        (4096, 1024),
        (4096, 4096),
        (4096, 8192),
        (2048, 16384),
        (16384, 8192),
    ),
    # half precision: output rounding (fp16 ulp 2^-11, bf16 2^-8, relative) plus the eager
    # baseline's double rounding (normalize, cast, then weight)
    tolerances={"float16": (2e-2, 1e-2), "bfloat16": (6e-2, 3e-2), "float32": (1e-4, 1e-4)},
    bytes_moved=lambda shape, itemsize: (2 * shape[0] * shape[1] + shape[1]) * itemsize,
    flops=lambda shape: 4 * shape[0] * shape[1],  # square, sum, scale by rstd, multiply by w
    interpret_shapes=((4, 64), (3, 100), (2, 1024)),
)

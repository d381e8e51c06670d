"""RMSNorm: y = x / sqrt(mean(x^2) + eps) * w, row-wise over the last dimension.

The lab's fused Triton kernel against four baselines: the classic unfused eager PyTorch code
(upcast, pow, mean, rsqrt, multiply, weight, cast back), torch.nn.functional.rms_norm,
torch.compile of the eager code, and Liger-Kernel's RMSNorm (the optional extra [peers]).
Minimum traffic: read x and w once, write y once.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from profkit.compile_baseline import compile_per_shape
from profkit.spec import DTYPE_ITEMSIZE, KernelSpec, Variant

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
    EVEN: tl.constexpr = False,
    X_EVICT: tl.constexpr = "evict_first",
    CHUNKS: tl.constexpr = 1,
):
    # Each program normalizes ROWS whole rows: x is read from DRAM once and y written once, which
    # is the whole fusion win over the eager chain. CHUNKS > 1 (v4 candidate) walks a row in
    # BLOCK_N-wide chunks twice: sum of squares, then normalize with x re-read from L2 (the row
    # was read a moment ago), so the registers hold one chunk instead of the whole row.
    pid = tl.program_id(0)
    first = pid * ROWS
    # one 64-bit base per program, 32-bit offsets inside it: per-element int64 address math costs
    # registers, and registers capped this kernel's occupancy at 50% (ncu, probe run a)
    x_base = X + first.to(tl.int64) * stride_x
    y_base = Y + first.to(tl.int64) * stride_y
    rows = tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    x_ptrs = x_base + rows[:, None] * stride_x + cols[None, :]
    y_ptrs = y_base + rows[:, None] * stride_y + cols[None, :]
    # EVEN (v4 candidate): the shape fills every block, so no masks: masked loads cost predicate
    # and select instructions (compile ran 7% fewer instructions than v3, bf16 4096x8192, f1ea)
    row_ok = ((first + rows) < n_rows)[:, None]
    if CHUNKS == 1:
        col_ok = cols < n_cols
        if EVEN:
            x = tl.load(x_ptrs, eviction_policy=X_EVICT)
            if W_EARLY:
                w = tl.load(W + cols, eviction_policy="evict_last")
        else:
            # x is streamed once: evict it first so w (reused by every program) stays in L2
            if W_EARLY:
                # v3: w's loads issued with x's, held in the input dtype (half the registers of
                # fp32 in fp16/bf16); v2 loaded w after the reduction
                w = tl.load(W + cols, mask=col_ok, other=0.0, eviction_policy="evict_last")
            x = tl.load(x_ptrs, mask=row_ok & col_ok[None, :], other=0.0, eviction_policy=X_EVICT)
        # x stays in its own precision between the reduction and the output: values live across
        # the reduction cost registers (run 83a4)
        xf = x.to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(xf * xf, axis=1) / n_cols + eps)
        if not W_EARLY:
            if EVEN:
                w = tl.load(W + cols, eviction_policy="evict_last")
            else:
                w = tl.load(W + cols, mask=col_ok, other=0.0, eviction_policy="evict_last")
        y = (x.to(tl.float32) * rstd[:, None] * w.to(tl.float32)[None, :]).to(Y.dtype.element_ty)
        if EVEN:
            tl.store(y_ptrs, y)
        else:
            tl.store(y_ptrs, y, mask=row_ok & col_ok[None, :])
    else:
        # pass 1 marks x evict_last so pass 2 finds it in L2, and pass 2 streams it out
        # (X_EVICT): inductor's looped reduction does the same
        acc = tl.zeros([ROWS, BLOCK_N], dtype=tl.float32)
        for c in range(CHUNKS):
            col_ok = c * BLOCK_N + cols < n_cols
            if EVEN:
                xf = tl.load(x_ptrs + c * BLOCK_N, eviction_policy="evict_last").to(tl.float32)
            else:
                mask = row_ok & col_ok[None, :]
                xf = tl.load(
                    x_ptrs + c * BLOCK_N, mask=mask, other=0.0, eviction_policy="evict_last"
                )
                xf = xf.to(tl.float32)
            acc += xf * xf
        rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=1) / n_cols + eps)
        for c in range(CHUNKS):
            col_ok = c * BLOCK_N + cols < n_cols
            if EVEN:
                x = tl.load(x_ptrs + c * BLOCK_N, eviction_policy=X_EVICT)
                w = tl.load(W + c * BLOCK_N + cols, eviction_policy="evict_last")
            else:
                mask = row_ok & col_ok[None, :]
                x = tl.load(x_ptrs + c * BLOCK_N, mask=mask, other=0.0, eviction_policy=X_EVICT)
                w = tl.load(
                    W + c * BLOCK_N + cols, mask=col_ok, other=0.0, eviction_policy="evict_last"
                )
            y = x.to(tl.float32) * rstd[:, None] * w.to(tl.float32)[None, :]
            if EVEN:
                tl.store(y_ptrs + c * BLOCK_N, y.to(Y.dtype.element_ty))
            else:
                tl.store(y_ptrs + c * BLOCK_N, y.to(Y.dtype.element_ty), mask=mask)


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


# v3's design, what variant `triton` runs. A design is the kernel's constexpr options plus:
# UNMASKED (drop the masks where the shape fills every block), CHUNK (loop the row in chunks of
# this many elements, 0 = whole row in registers) and WARPS (0 = launch_config's warp count).
V3 = dict(W_EARLY=True, UNMASKED=False, X_EVICT="evict_first", CHUNK=0, WARPS=0)
# v4 (session 3), what variant `triton` runs: a design per row-size class, the first bound >= the
# row's bytes (N x itemsize), picked from bench/probe_rmsnorm.py on the H200 (kernels/NOTES.md,
# "v3 -> v4"). HALVES loops the row in two chunks (x's second read from L2): 20-31 registers
# against v3's 40-85, and inductor's own design; it tied compile at every 16 KB+ row where v3 lost.
V4_TABLE = {
    4 * 1024: dict(UNMASKED=True, WARPS=4),  # 4096x1024: 0.944-0.992 of compile (v3 1.005-1.057)
    8 * 1024: dict(UNMASKED=True),  # whole rows in registers, as v3: 0.890-0.921 of compile
    1 << 62: dict(UNMASKED=True, HALVES=True, WARPS=16),
}
# under one wave of programs (4 per SM on 132 SMs) a row's second pass is pure latency: keep v3
FEW_ROWS = 4 * 132


def v4_design(n_rows: int, n_cols: int, itemsize: int) -> dict:
    bound = min(b for b in V4_TABLE if b >= n_cols * itemsize)
    d = dict(V4_TABLE[bound])
    if d.pop("HALVES", False):
        if n_rows < FEW_ROWS:
            return dict(V3)
        d["CHUNK"] = n_cols // 2
    return {**V3, **d}


def plan(n_rows: int, n_cols: int, itemsize: int, design: dict | None = None, config=None):
    """(programs, constexpr arguments, num_warps) of one launch of a design (v3 by default)."""
    d = {**V3, **(design or {})}
    chunk = d["CHUNK"] if 0 < d["CHUNK"] < n_cols else 0
    # a chunked row is one row per program, its warps sized for one chunk (or set by WARPS)
    block_n, rows, num_warps = config or (
        launch_config(1, chunk, itemsize) if chunk else launch_config(n_rows, n_cols, itemsize)
    )
    chunks = triton.cdiv(n_cols, block_n)
    even = d["UNMASKED"] and n_cols == block_n * chunks and n_rows % rows == 0
    const = dict(BLOCK_N=block_n, ROWS=rows, W_EARLY=d["W_EARLY"], EVEN=even)
    const |= dict(X_EVICT=d["X_EVICT"], CHUNKS=chunks)
    return triton.cdiv(n_rows, rows), const, d["WARPS"] or num_warps


def rmsnorm_triton_v3(
    inputs: dict, config: tuple[int, int, int] | None = None, design: dict | None = None
) -> torch.Tensor:
    """v3's design unless a design or config is given (the probes pass candidates here)."""
    x, w, out = inputs["x"], inputs["w"], inputs["out"]
    x2, y2 = x.reshape(-1, x.shape[-1]), out.reshape(-1, x.shape[-1])
    n_rows, n_cols = x2.shape
    programs, const, num_warps = plan(n_rows, n_cols, x.element_size(), design, config)
    _rmsnorm_kernel[(programs,)](
        x2, w, y2, n_rows, n_cols, x2.stride(0), y2.stride(0), EPS, **const, num_warps=num_warps
    )
    return out


def rmsnorm_triton_v2(inputs: dict) -> torch.Tensor:
    """The previous version (w loaded after the reduction), kept for side-by-side timing."""
    return rmsnorm_triton_v3(inputs, design={"W_EARLY": False})


def rmsnorm_triton(inputs: dict) -> torch.Tensor:
    """v4: V4_TABLE's design for the row size (unmasked; rows of 16 KB+ in two halves)."""
    x = inputs["x"]
    n_cols = x.shape[-1]
    return rmsnorm_triton_v3(
        inputs, design=v4_design(x.numel() // n_cols, n_cols, x.element_size())
    )


# `profkit tune`: the chunk width (a whole row when it covers one), rows per program and warps;
# every other choice (masks, eviction, w's early load) stays v4's for the shape
TUNABLES = {"BLOCK_N": (1024, 2048, 4096, 8192), "ROWS": (1, 2, 4), "num_warps": (4, 8, 16, 32)}


def configure(params: dict):
    """variant triton at params (TUNABLES' names) instead of V4_TABLE's launch."""

    def run(inputs: dict) -> torch.Tensor:
        x = inputs["x"]
        n_cols = x.shape[-1]
        design = v4_design(x.numel() // n_cols, n_cols, x.element_size())
        block = min(params["BLOCK_N"], triton.next_power_of_2(n_cols))
        config = (block, params["ROWS"], params["num_warps"])
        return rmsnorm_triton_v3(inputs, config, {**design, "WARPS": 0, "CHUNK": 0})

    return run


def shipped(shape, dtype: str) -> dict:
    """The params variant triton launches at a case (V4_TABLE's design through plan)."""
    n_cols = shape[-1]
    n_rows = math.prod(shape) // n_cols
    itemsize = DTYPE_ITEMSIZE[dtype]
    _, const, warps = plan(n_rows, n_cols, itemsize, v4_design(n_rows, n_cols, itemsize))
    return {"BLOCK_N": const["BLOCK_N"], "ROWS": const["ROWS"], "num_warps": warps}


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


def _liger() -> callable:
    """Liger-Kernel's RMSNorm with the eager code's semantics: casting mode "llama" (rstd in fp32,
    the normalized row cast back before the weight), no weight offset. Imported when first used,
    once per capture (the variant's prepare): Liger is an optional extra."""
    from liger_kernel.ops import LigerRMSNormFunction

    return lambda inputs: LigerRMSNormFunction.apply(
        inputs["x"], inputs["w"], EPS, 0.0, "llama", False
    )


def rmsnorm_liger(inputs: dict) -> torch.Tensor:
    return _liger()(inputs)


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
            description="fused Triton kernel (v4): a design per row size, 16 KB+ rows in halves",
            tunables=TUNABLES,
            configure=configure,
            shipped=shipped,
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
            "liger",
            rmsnorm_liger,
            baseline=True,
            prepare=_liger,
            requires=("liger_kernel",),
            interpretable=False,  # its scalar eps.to(...) fails in the interpreter
            description="Liger-Kernel's LigerRMSNormFunction (extra [peers])",
        ),
        Variant(
            "triton_v2",
            rmsnorm_triton_v2,
            description="v2 of the fused kernel: w loaded after the reduction",
        ),
        Variant(
            "triton_v3",
            rmsnorm_triton_v3,
            description="v3 of the fused kernel: whole rows in registers, w loaded with x",
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

"""Fused residual add + RMSNorm: h = x + r, y = h / sqrt(mean(h^2) + eps) * w, writing h and y.

A decoder layer's step between blocks: h is the new residual stream, y the next block's input.
The lab's Triton kernel against three baselines: eager PyTorch (the add, then Llama's RMSNorm
code, every step its own kernel), torch.compile of it, and Liger-Kernel's
LigerFusedAddRMSNormFunction (the optional extra [peers]). All four normalize h as stored, in
the input dtype (Liger's casting mode "llama": rstd in fp32). Minimum traffic: read x, r and w
once, write h and y once.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from profkit.compile_baseline import compile_per_shape
from profkit.spec import KernelSpec, Variant

EPS = 1e-6
FEW_ROWS = 4 * 132  # under one wave of programs (4 per SM of the H200's 132)
MAX_ROW_IN_REGISTERS = 16384  # elements: 32 per thread at 16 warps, as Liger holds them


@triton.jit
def _add_rmsnorm_kernel(
    X,
    R,
    W,
    H,
    Y,
    n_rows,
    n_cols,
    eps,
    BLOCK_N: tl.constexpr,
    ROWS: tl.constexpr,
    CHUNKS: tl.constexpr,
    EVEN: tl.constexpr,
):
    # ROWS rows per program, each row CHUNKS chunks of BLOCK_N (rows are contiguous, n_cols
    # apart). CHUNKS == 1: the row stays in registers, so x and r are read once and h and y
    # written once. CHUNKS > 1 (long rows): pass 1 adds and stores h chunk by chunk, summing
    # squares; pass 2 reads h back (written a moment ago: from L2) with w and writes y, so the
    # registers hold one chunk, not the row (RMSNorm v4's halves, kernels/NOTES.md). The chunk
    # loops are unrolled (static_range), so at CHUNKS == 1 pass 2 sees pass 1's h
    first = tl.program_id(0) * ROWS
    base = first.to(tl.int64) * n_cols  # one 64-bit base, 32-bit offsets inside it
    rows = tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    offs = base + rows[:, None] * n_cols + cols[None, :]
    row_ok = ((first + rows) < n_rows)[:, None]
    dt = H.dtype.element_ty
    acc = tl.zeros([ROWS, BLOCK_N], dtype=tl.float32)
    for c in tl.static_range(CHUNKS):
        at = offs + c * BLOCK_N
        if EVEN:
            x = tl.load(X + at)
            r = tl.load(R + at)
        else:
            mask = row_ok & (c * BLOCK_N + cols < n_cols)[None, :]
            x = tl.load(X + at, mask=mask, other=0.0)
            r = tl.load(R + at, mask=mask, other=0.0)
        # h rounded to the dtype, as stored: the norm is of the residual the next layer reads
        h = (x.to(tl.float32) + r.to(tl.float32)).to(dt)
        if EVEN:
            tl.store(H + at, h)
        else:
            tl.store(H + at, h, mask=mask)
        hf = h.to(tl.float32)
        acc += hf * hf
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=1) / n_cols + eps)
    if CHUNKS > 1:
        tl.debug_barrier()  # pass 1's stores of h are visible to every thread of the program
    for c in tl.static_range(CHUNKS):
        at = offs + c * BLOCK_N
        col_ok = c * BLOCK_N + cols < n_cols
        if CHUNKS > 1:  # else h is still in registers
            if EVEN:
                h = tl.load(H + at)
            else:
                mask = row_ok & col_ok[None, :]
                h = tl.load(H + at, mask=mask, other=0.0)
        # w is shared by every row: it stays in L2
        if EVEN:
            w = tl.load(W + c * BLOCK_N + cols, eviction_policy="evict_last")
        else:
            w_ptrs = W + c * BLOCK_N + cols
            w = tl.load(w_ptrs, mask=col_ok, other=0.0, eviction_policy="evict_last")
        y = (h.to(tl.float32) * rstd[:, None] * w.to(tl.float32)[None, :]).to(dt)
        if EVEN:
            tl.store(Y + at, y)
        else:
            tl.store(Y + at, y, mask=row_ok & col_ok[None, :])


@dataclass(frozen=True)
class Config:
    """One launch: ROWS rows per program, each in CHUNKS chunks of BLOCK_N, over WARPS warps."""

    block_n: int
    rows: int
    chunks: int
    warps: int


def launch_config(n_rows: int, n_cols: int, itemsize: int) -> Config:
    """Rows of up to MAX_ROW_IN_REGISTERS elements whole in registers, one row per program at
    ~16 values per thread (warps = elements / 512, 4 to 16): x and r read once, h and y written
    once, as Liger-Kernel's fused add + RMSNorm does. Rows of up to 2048 elements are packed so
    a program still reads ~16 KB of x where there are programs to spare (4 warps up to 4 KB).
    Longer rows in two chunks at 16 warps, h read back from L2 in pass 2. The first design (two
    chunks from 8 KB rows on, 2-row programs at 4096 columns, evict_first loads) ran 4-8% behind
    Liger at 4096x4096 and up (kernels/NOTES.md, add_rmsnorm session 9)."""
    if n_cols > MAX_ROW_IN_REGISTERS and n_rows >= FEW_ROWS and n_cols % 2 == 0:
        return Config(triton.next_power_of_2(n_cols // 2), 1, 2, 16)
    block_n = triton.next_power_of_2(n_cols)
    rows = 1
    while block_n <= 2048 and block_n * rows * itemsize < 16384 and n_rows >= rows * 2 * FEW_ROWS:
        rows *= 2
    warps = 4 if n_cols * itemsize <= 4 * 1024 else min(16, max(4, block_n * rows // 512))
    return Config(block_n, rows, 1, warps)


def add_rmsnorm_triton(inputs: dict, config: Config | None = None) -> tuple:
    x, r, w, out = inputs["x"], inputs["r"], inputs["w"], inputs["out"]
    n_cols = x.shape[-1]
    n_rows = x.numel() // n_cols
    h, y = out[0], out[1]
    cfg = config or launch_config(n_rows, n_cols, x.element_size())
    if cfg.block_n * cfg.chunks < n_cols:
        raise ValueError(f"add_rmsnorm: {cfg} does not cover a row of {n_cols}")
    even = n_cols == cfg.block_n * cfg.chunks and n_rows % cfg.rows == 0
    _add_rmsnorm_kernel[(triton.cdiv(n_rows, cfg.rows),)](
        x, r, w, h, y, n_rows, n_cols, EPS,
        BLOCK_N=cfg.block_n, ROWS=cfg.rows, CHUNKS=cfg.chunks, EVEN=even, num_warps=cfg.warps,
    )  # fmt: skip
    return h, y


def add_rmsnorm_eager(inputs: dict) -> tuple:
    """The add, then Llama's RMSNorm code (upcast, pow, mean, rsqrt, multiply, cast, weight)."""
    x, w = inputs["x"], inputs["w"]
    h = x + inputs["r"]
    hf = h.to(torch.float32)
    hf = hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + EPS)
    return h, w * hf.to(x.dtype)


def _compiled() -> callable:
    return compile_per_shape(add_rmsnorm_eager)


def _liger() -> callable:
    """Liger-Kernel's fused add + RMSNorm, casting mode "llama" and no weight offset as the eager
    code; it returns (y, h). Imported when first used, once per capture (the variant's prepare):
    Liger is an optional extra."""
    from liger_kernel.ops import LigerFusedAddRMSNormFunction

    def run(inputs: dict) -> tuple:
        y, h = LigerFusedAddRMSNormFunction.apply(
            inputs["x"], inputs["r"], inputs["w"], EPS, 0.0, "llama", False
        )
        return h, y

    return run


def add_rmsnorm_liger(inputs: dict) -> tuple:
    return _liger()(inputs)


def make_inputs(shape, dtype: str, device: str, generator: torch.Generator) -> dict:
    dt = getattr(torch, dtype)
    x = torch.randn(shape, generator=generator, device=device, dtype=torch.float32).to(dt)
    r = torch.randn(shape, generator=generator, device=device, dtype=torch.float32).to(dt)
    w = (1 + 0.5 * torch.randn(shape[-1], generator=generator, device=device)).to(dt)
    # h and y side by side in one tensor: capture poisons `out`, so an unwritten element fails
    return {"x": x, "r": r, "w": w, "out": torch.empty((2, *shape), device=device, dtype=dt)}


def reference(inputs: dict) -> tuple:
    h = inputs["x"].double() + inputs["r"].double()
    y = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + EPS) * inputs["w"].double()
    return h, y


def _rows_cols(shape) -> tuple[int, int]:
    if len(shape) != 2:  # capture reports it before any work
        raise ValueError("add_rmsnorm takes 2-D shapes ROWSxCOLS, e.g. 4096x8192")
    return shape[0], shape[1]


def bytes_moved(shape, itemsize: int) -> int:
    rows, cols = _rows_cols(shape)
    return (4 * rows * cols + cols) * itemsize  # read x, r and w once; write h and y once


def flops(shape) -> int:
    rows, cols = _rows_cols(shape)
    return 5 * rows * cols  # add, square, sum, scale by rstd, multiply by w


SPEC = KernelSpec(
    name="add_rmsnorm",
    description="fused residual add + RMSNorm (Llama-style, eps=1e-6), writing h and y",
    variants=(
        Variant(
            "triton",
            add_rmsnorm_triton,
            description="Triton: rows in registers, rows of 8 KB+ in two chunks",
        ),
        Variant("eager", add_rmsnorm_eager, baseline=True, description="add, then unfused RMSNorm"),
        Variant(
            "compile",
            add_rmsnorm_eager,
            baseline=True,
            prepare=_compiled,
            description="torch.compile of the eager code",
        ),
        Variant(
            "liger",
            add_rmsnorm_liger,
            baseline=True,
            prepare=_liger,
            requires=("liger_kernel",),
            interpretable=False,  # its scalar eps.to(...) fails in the interpreter
            description="Liger-Kernel's LigerFusedAddRMSNormFunction (extra [peers])",
        ),
    ),
    make_inputs=make_inputs,
    reference=reference,
    dtypes=("float16", "bfloat16", "float32"),
    # RMSNorm's sweep: decode-like and prefill-like rows, hidden sizes 1024..16384
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
    # RMSNorm's tolerances (output rounding plus the eager code's double rounding); h is one
    # rounding of an exact sum
    tolerances={"float16": (2e-2, 1e-2), "bfloat16": (6e-2, 3e-2), "float32": (1e-4, 1e-4)},
    bytes_moved=bytes_moved,
    flops=flops,
    interpret_shapes=((4, 64), (3, 100), (2, 1024)),
)

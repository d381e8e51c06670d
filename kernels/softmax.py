"""Row softmax over the last dimension: y = exp(x - max(x)) / sum(exp(x - max(x))).

The lab's Triton kernel (one variant; CONFIG picks a design per shape class) against four
baselines: the unfused eager code (max, subtract, exp, sum, divide: each its own kernel),
torch.softmax, torch.compile of the eager code, and Liger-Kernel's softmax (the optional extra
[peers]). The two designs CONFIG ships:
- Rows, rows up to 16384 elements: a program holds whole rows in registers, reads x once,
  writes y once.
- RowSplit, longer rows: each row over S adjacent programs that hold their chunk in registers,
  publish its max and sum, count their arrival on a per-row counter, wait for the row's other
  chunks, then write y from registers: x read once, one launch (79-81% of a same-size copy in
  16-bit, 86-93% in fp32; the exchange is ~30% of the warps' time, kernels/NOTES.md).
Seven other designs were measured and lost (an online loop, a two-launch split, four other
exchanges, two tensor-descriptor forms); kernels/NOTES.md, "Designs removed from the tree", says
what each was, its best figure and the commit that holds it.
Minimum traffic: read x once, write y once (what the floor counts).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace

import torch
import triton
import triton.language as tl

from profkit.compile_baseline import compile_per_shape
from profkit.spec import DTYPE_ITEMSIZE, KernelSpec, Variant

MAX_ROW_IN_REGISTERS = 16384  # elements: 32 fp32 values per thread at 16 warps
PROGRAMS_TARGET = 4 * 132  # long rows: at least 4 programs per SM of the H200's 132


@triton.jit
def _softmax_rows_kernel(
    X,
    Y,
    n_rows,
    n_cols,
    stride_x,
    stride_y,
    BLOCK_N: tl.constexpr,
    ROWS: tl.constexpr,
):
    # ROWS whole rows per program, in registers: one read of x, one write of y
    pid = tl.program_id(0)
    first = pid * ROWS
    x_base = X + first.to(tl.int64) * stride_x
    y_base = Y + first.to(tl.int64) * stride_y
    rows = tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    mask = ((first + rows) < n_rows)[:, None] & (cols < n_cols)[None, :]
    # no cache hint: evict_first here cost 4-7% at 4096x16384 and 16384x8192 against the same
    # launch without it (kernels/NOTES.md, softmax session 9)
    x = tl.load(x_base + rows[:, None] * stride_x + cols[None, :], mask=mask, other=-float("inf"))
    # masked lanes are -inf: exp gives 0 and they drop out of the sum; a fully masked row (past
    # n_rows) gives NaN there, but it is never stored
    x = x.to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=1)[:, None])
    y = e / tl.sum(e, axis=1)[:, None]
    tl.store(y_base + rows[:, None] * stride_y + cols[None, :], y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def _row_stats(
    STATS, COUNT, row, old, S: tl.constexpr, MODE: tl.constexpr, MAX_SPINS: tl.constexpr
):
    # a row's max and sum of exp from its S chunk statistics, after this program's arrival
    # (old: the counter before it). MODE 0 first waits for the row's S arrivals, bounded: a
    # legitimate wait is about one program's lifetime (microseconds), 2^16 polls (the default)
    # tens of milliseconds; if a sibling never arrives the sum comes out NaN (the reference
    # check fails the row) instead of the GPU hanging. Generations: the counter is never reset;
    # one call's S arrivals take it from a multiple of S (base) to base + S (S a power of two,
    # so this holds across int32 wrap-around)
    base = old & (-S)
    poison = 0.0
    if MODE == 0:
        cur = old + 1  # the counter as last seen, right after this program's arrival
        spins = 0
        while ((cur & (-S)) == base) & (spins < MAX_SPINS):
            cur = tl.atomic_add(COUNT + row, 0, sem="acquire")
            spins += 1
        poison = tl.where((cur & (-S)) == base, float("nan"), 0.0)
    offs = tl.arange(0, S)
    # .cg: from L2, never a line of STATS another program left stale in this SM's L1
    ms = tl.load(STATS + (row * S + offs) * 2, cache_modifier=".cg")
    ss = tl.load(STATS + (row * S + offs) * 2 + 1, cache_modifier=".cg")
    row_max = tl.max(ms, axis=0)
    return row_max, tl.sum(ss * tl.exp(ms - row_max), axis=0) + poison  # -inf chunks add 0


@triton.jit
def _softmax_rowsplit_kernel(
    X,
    Y,
    STATS,
    COUNT,
    n_cols,
    stride_x,
    stride_y,
    BLOCK: tl.constexpr,
    S: tl.constexpr,
    MODE: tl.constexpr,
    MAX_SPINS: tl.constexpr = 1 << 16,
):
    # each row over S adjacent programs (pid = row * S + split), chunk in registers: x read once.
    # MODE 0: publish the chunk's (max, sum), count the arrival, wait for the row's S chunks,
    #   combine, write y from registers (one launch; GPU only: it needs the row's programs
    #   resident together).
    # MODE 1: publish only. MODE 2: publish, count, no wait, combine, write y: after a MODE 1
    #   launch over the same x (the STATS it reads are already complete) this is the same math
    #   as MODE 0 with no program waiting on another, so Triton's interpreter can run it.
    # Deadlock freedom of MODE 0 rests on blocks being dispatched in id order (what the GPU does,
    # not a CUDA guarantee): a waiting program waits only for the <= S - 1 ids after it, and
    # every row whose S programs are resident finishes, so progress needs S <= resident slots.
    pid = tl.program_id(0)
    row = pid // S
    split = pid % S
    cols = split * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(X + row.to(tl.int64) * stride_x + cols, mask=mask, other=-float("inf")).to(
        tl.float32
    )
    m = tl.max(x, axis=0)
    m_safe = tl.where(m == -float("inf"), 0.0, m)  # a chunk wholly past n_cols: e = 0, not NaN
    e = tl.exp(x - m_safe)
    stat = STATS + (row * S + split) * 2
    tl.store(stat, m)
    tl.store(stat + 1, tl.sum(e, axis=0))
    if MODE != 1:
        tl.debug_barrier()  # the stats are written before the arrival is counted
        # generation scheme: the counter is never reset; the row's S arrivals of one launch take
        # it from a multiple of S (base) to base + S (S a power of two, so this holds across
        # int32 wrap-around); the next launch on the stream starts at base + S
        old = tl.atomic_add(COUNT + row, 1, sem="acq_rel")
        row_max, row_sum = _row_stats(STATS, COUNT, row, old, S, MODE, MAX_SPINS)
        # e = exp(x - m) stays in registers: y = e * exp(m - max) / sum, no second exp
        y = e * (tl.exp(m_safe - row_max) / row_sum)
        y_ptr = Y + row.to(tl.int64) * stride_y + cols
        tl.store(y_ptr, y.to(Y.dtype.element_ty), mask=mask)


# Triton's interpreter runs programs one at a time: a program waiting for another never returns
_INTERPRETING = os.environ.get("TRITON_INTERPRET") == "1"
_COUNTERS: dict[tuple[str, int, int], torch.Tensor] = {}


def _rowsplit(
    x2, y2, block: int, splits: int, num_warps: int, single_launch: bool, max_spins: int = 1 << 16
) -> None:
    """Rows over `splits` programs of one BLOCK-element chunk each (see the kernel).
    single_launch: MODE 0 (x read once); else MODE 1 then MODE 2, the same statistics and
    normalization in two launches (x read twice), which is what the CPU interpreter can run.
    The per-row arrival counters are zeroed once per (device, rows, splits), on the first call
    (make it outside a CUDA graph), and never reset: the kernel counts generations, so a call is
    one launch and a graph replays it. Calls sharing counters must be ordered (one stream)."""
    n_rows, n_cols = x2.shape
    if splits & (splits - 1) or block * splits < n_cols:
        raise ValueError(f"rowsplit: splits {splits} must be a power of two covering the row")
    key = (str(x2.device), n_rows, splits)
    if key not in _COUNTERS:
        _COUNTERS[key] = torch.zeros(n_rows, dtype=torch.int32, device=x2.device)
    # fresh fp32 chunk statistics (max, sum per chunk)
    stats = torch.empty(n_rows * splits * 2, device=x2.device, dtype=torch.float32)
    args = (x2, y2, stats, _COUNTERS[key], n_cols, x2.stride(0), y2.stride(0))
    grid = (n_rows * splits,)  # 1-D: a row's programs are adjacent ids (see the kernel)
    for mode in (0,) if single_launch else (1, 2):
        _softmax_rowsplit_kernel[grid](
            *args, BLOCK=block, S=splits, MODE=mode, MAX_SPINS=max_spins, num_warps=num_warps
        )


@dataclass(frozen=True)
class Rows:
    """Whole rows in registers (_softmax_rows_kernel); None fields are derived from the shape.
    block_n: the row rounded up to a power of two (x read once). rows: rows per program (packing
    two 4096-column 16-bit rows into one 16-warp program lost to one row at 8 warps, session 9).
    warps: ~16 values per thread (elements / 512, 4..16), as RMSNorm's kernel measured."""

    block_n: int | None = None
    rows: int = 1
    warps: int | None = None


@dataclass(frozen=True)
class RowSplit:
    """Each row over `splits` adjacent programs of `block` elements that exchange chunk
    statistics in one launch (_softmax_rowsplit_kernel, which states its dispatch-order
    assumption). splits: a power of two, derived when None (the smallest covering the row);
    warps: 32 values per thread in 16-bit, 64 in fp32 when None."""

    block: int = 8192
    splits: int | None = None
    warps: int | None = None


# launch_config's design per shape class; None fields are derived from the shape. Switching a
# class is an edit of its line. Picked from bench/probe_softmax*.py on the H200 (kernels/NOTES.md,
# softmax "session 3" on)
CONFIG = {
    # <= 2048 columns (4096x1024): one row per 64-thread program; 94-98% of a same-size copy in
    # 16-bit against the old 8-row programs' 88-94%
    "short": Rows(rows=1, warps=2),
    # <= 8192 columns: one row per program (4096 columns in 16-bit: 8 warps, 17.4-17.5 us against
    # 2 rows x 16 warps' 18.2-18.4; session 9 against Liger)
    "mid": Rows(),
    "wide": Rows(rows=1, warps=32),  # 16384 columns: 16 per thread, 32 registers
    # up to 32768 columns with >= 528 rows: the row in registers at 32 warps beat every loop
    # (68-84% of copy at 1024x32768 against 62-71% for loop 8192)
    # session 4 probe (bench/results/h200-20261130-s4/r/softmax): the one-launch split row, x read
    # once: 1024x32768 in 4096-element programs at 8 warps 74.1 / 74.1 / 91.6% of copy
    # (fp16 / bf16 / fp32) against rows w32's 68.5 / 68.1 / 84.1%
    # session 5 probe (bench/results/h200-20261130-s5/call3/softmax5): 8192-element programs with
    # 32 values per thread in 16-bit (8 warps) and 64 in fp32 (4 warps), more bytes in flight per
    # thread: 1024x32768 80.8 / 80.9 / 92.4% of copy against 73.9 / 74.5 / 89.6% (4096 x 8 warps)
    "long": RowSplit(8192),
    # 256x65536: 77.3 / 77.8 / 87.1% against 8192 x 16 warps' 69.4 / 70.8 / 84.2% (session 4's
    # choice; the loop before it 61.3 / 59.2 / 65.0%)
    "few_long": RowSplit(8192),
}


def shape_class(n_rows: int, n_cols: int) -> str:
    if n_cols <= 2048:
        return "short"
    if n_cols <= 8192:
        return "mid"
    if n_cols <= MAX_ROW_IN_REGISTERS:
        return "wide"
    if n_cols <= 2 * MAX_ROW_IN_REGISTERS and n_rows >= PROGRAMS_TARGET:
        return "long"
    return "few_long"


def launch_config(n_rows: int, n_cols: int, itemsize: int) -> Rows | RowSplit:
    """The shape class's CONFIG entry with its None fields derived (see Rows and RowSplit).
    At 16384 columns 16 warps held 32 values per thread (64 registers, 50% occupancy, run f2f5);
    32 warps hold 16 (32 registers offline: two 1024-thread programs per SM, 100%)."""
    cfg = CONFIG[shape_class(n_rows, n_cols)]
    if isinstance(cfg, Rows):
        block = cfg.block_n or triton.next_power_of_2(n_cols)
        warps = cfg.warps or min(16, max(4, block * cfg.rows // 512))
        return Rows(block, cfg.rows, warps)
    # the smallest power of two of chunks covering the row
    splits = cfg.splits or triton.next_power_of_2(triton.cdiv(n_cols, cfg.block))
    # 32 values per thread in 16-bit, 64 in fp32: the best of 16/32/64 in each (session 5)
    warps = cfg.warps or max(1, cfg.block // (32 * (32 if itemsize == 2 else 64)))
    return replace(cfg, splits=splits, warps=warps)


def softmax_triton(inputs: dict, config: Rows | RowSplit | None = None) -> torch.Tensor:
    """config: a whole Rows or RowSplit (no None field); launch_config's by default."""
    x, out = inputs["x"], inputs["out"]
    x2, y2 = x.reshape(-1, x.shape[-1]), out.reshape(-1, x.shape[-1])
    if x2.stride(-1) != 1:  # every kernel indexes a row's elements as adjacent
        x2 = x2.contiguous()
    n_rows, n_cols = x2.shape
    cfg = config or launch_config(n_rows, n_cols, x.element_size())
    if isinstance(cfg, Rows):
        _softmax_rows_kernel[(triton.cdiv(n_rows, cfg.rows),)](
            x2,
            y2,
            n_rows,
            n_cols,
            x2.stride(0),
            y2.stride(0),
            BLOCK_N=cfg.block_n,
            ROWS=cfg.rows,
            num_warps=cfg.warps,
        )
    else:
        _rowsplit(x2, y2, cfg.block, cfg.splits, cfg.warps, single_launch=not _INTERPRETING)
    return out


# `profkit tune`: the rows design (rows up to MAX_ROW_IN_REGISTERS columns, each in registers):
# rows per program and warps; the block always covers the row. Bounded at 4 rows and 4 warps: up
# to 512 values per thread at 16384 columns (the grid: 12 configurations)
TUNABLES = {"ROWS": (1, 2, 4), "num_warps": (4, 8, 16, 32)}


def _rows_only(n_rows: int, n_cols: int, itemsize: int) -> Rows:
    cfg = launch_config(n_rows, n_cols, itemsize)
    if not isinstance(cfg, Rows):
        raise ValueError(
            f"softmax's tunables cover its rows design (up to {MAX_ROW_IN_REGISTERS} columns); "
            f"{n_rows}x{n_cols} runs the split-row design"
        )
    return cfg


def configure(params: dict):
    """variant triton at params (TUNABLES' names) instead of CONFIG's launch."""

    def run(inputs: dict) -> torch.Tensor:
        x = inputs["x"]
        n_cols = x.shape[-1]
        cfg = _rows_only(x.numel() // n_cols, n_cols, x.element_size())
        return softmax_triton(inputs, replace(cfg, rows=params["ROWS"], warps=params["num_warps"]))

    return run


def shipped(shape, dtype: str) -> dict:
    n_cols = shape[-1]
    cfg = _rows_only(math.prod(shape) // n_cols, n_cols, DTYPE_ITEMSIZE[dtype])
    return {"ROWS": cfg.rows, "num_warps": cfg.warps}


def softmax_eager(inputs: dict) -> torch.Tensor:
    """Softmax written out as the textbook does: every step is its own kernel."""
    x = inputs["x"]
    h = x.to(torch.float32)
    e = torch.exp(h - h.amax(-1, keepdim=True))
    return (e / e.sum(-1, keepdim=True)).to(x.dtype)


def softmax_torch(inputs: dict) -> torch.Tensor:
    return torch.softmax(inputs["x"], dim=-1)


def _compiled() -> callable:
    return compile_per_shape(softmax_eager)


def _liger() -> callable:
    """Liger-Kernel's softmax over the last dimension (its output in x's dtype, as torch's).
    Imported when first used, once per capture (the variant's prepare): an optional extra."""
    from liger_kernel.ops import LigerSoftmaxFunction

    return lambda inputs: LigerSoftmaxFunction.apply(inputs["x"])


def softmax_liger(inputs: dict) -> torch.Tensor:
    return _liger()(inputs)


def make_inputs(shape, dtype: str, device: str, generator: torch.Generator) -> dict:
    # logits of spread 2: rows are neither flat nor one-hot
    dt = getattr(torch, dtype)
    x = (2 * torch.randn(shape, generator=generator, device=device, dtype=torch.float32)).to(dt)
    return {"x": x, "out": torch.empty_like(x)}


def reference(inputs: dict) -> torch.Tensor:
    return torch.softmax(inputs["x"].double(), dim=-1)


def _rows_cols(shape) -> tuple[int, int]:
    if len(shape) != 2:  # capture reports it before any work
        raise ValueError("softmax takes 2-D shapes ROWSxCOLS, e.g. 4096x4096")
    return shape[0], shape[1]


def bytes_moved(shape, itemsize: int) -> int:
    rows, cols = _rows_cols(shape)
    return 2 * rows * cols * itemsize  # read x once, write y once


def flops(shape) -> int:
    rows, cols = _rows_cols(shape)
    return 5 * rows * cols  # max, subtract, exp, sum, scale (exp counted as one)


SPEC = KernelSpec(
    name="softmax",
    description="row softmax over the last dimension",
    variants=(
        Variant(
            "triton",
            softmax_triton,
            description="Triton: rows in registers to 16384, else split over programs",
            tunables=TUNABLES,
            configure=configure,
            shipped=shipped,
        ),
        Variant(
            "eager", softmax_eager, baseline=True, description="unfused eager (exp, sum, divide)"
        ),
        Variant("torch", softmax_torch, baseline=True, description="torch.softmax"),
        Variant(
            "compile",
            softmax_eager,
            baseline=True,
            prepare=_compiled,
            description="torch.compile of the eager code",
        ),
        Variant(
            "liger",
            softmax_liger,
            baseline=True,
            prepare=_liger,
            requires=("liger_kernel",),
            description="Liger-Kernel's LigerSoftmaxFunction (extra [peers])",
        ),
    ),
    make_inputs=make_inputs,
    reference=reference,
    dtypes=("float16", "bfloat16", "float32"),
    # rows path 1024 .. 16384 columns; long rows 1024x32768 ("long") and 256x65536 ("few_long")
    shapes=((4096, 1024), (4096, 4096), (4096, 16384), (16384, 8192), (1024, 32768), (256, 65536)),
    # outputs lie in (0, 1] and reach ~1e-5 at 65536 columns, so atol stays far below them:
    # fp16 rounds relative 2^-11 (values under 6e-5 are subnormal: absolute 2^-25), bf16 2^-8
    # (the interpreter truncates: 2^-7), fp32 exp/divide ~1e-7 relative
    tolerances={"float16": (1e-6, 4e-3), "bfloat16": (1e-6, 2e-2), "float32": (1e-8, 1e-4)},
    bytes_moved=bytes_moved,
    flops=flops,
    interpret_shapes=((4, 64), (3, 100), (2, 1024)),
)

"""Sum over the last dimension: a 1-D tensor to a scalar, or each row of a 2-D tensor.

Two structurally different Triton reductions, both accumulating in fp32 and writing fp32:
- triton_tree: a two-stage tree. Stage 1: programs sum contiguous chunks of a row into a buffer
  of partial sums; stage 2: one program per row sums its partials in a fixed order. Two launches,
  bitwise reproducible.
- triton_atomic: one pass. Programs stride over the row (grid-stride loop) and add their partial
  sum into the output with an fp32 atomic; the output is zeroed first (a memset). The order in
  which the partials land changes from run to run, and so do the last bits of the result.
- triton_onepass: the tree's two stages in one launch (the stage-1 kernel with ONEPASS set).
  Programs write their partials as in stage 1, then count their arrival on a per-row counter
  (an integer atomic); the program that arrives last sums the row's partials in the fixed order
  and resets the counter. Bitwise the same result as triton_tree, with no second launch and no
  memset.
When a row needs only one program (enough rows to fill the GPU), all three write the row's sum
directly and run the same single kernel.

Against torch.sum(x, dim=-1, dtype=torch.float32, out=out): fp32 accumulation and an fp32 result
for every input dtype, so all three differ only in summation order. Minimum traffic: read x once,
write one fp32 per row.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from profkit.spec import KernelSpec, Variant

SMS = 132  # H200
PROGRAMS_TARGET = 4 * SMS  # one resident wave: 4 programs of 16 KB loads in flight per SM


@triton.jit
def _partial(
    X,
    row,
    split,
    n_splits,
    cols,
    stride_row,
    chunk,
    BLOCK: tl.constexpr,
    INTERLEAVE: tl.constexpr,
    WHOLE: tl.constexpr,
):
    # program `split` of a row: the fp32 sum of its blocks, each lane adding its own column
    # sequence in a fixed order, one tree over the lanes at the end (deterministic either way).
    # INTERLEAVE: blocks split, split + n_splits, ... (the row's programs read neighbouring blocks
    # at any moment); else one contiguous chunk x[row, split*chunk : (split+1)*chunk]
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    if INTERLEAVE:
        base = X + row.to(tl.int64) * stride_row
        first, step, end = split * BLOCK, n_splits * BLOCK, cols
    else:
        base = X + row.to(tl.int64) * stride_row + split.to(tl.int64) * chunk
        first, step, end = 0, BLOCK, tl.minimum(chunk, cols - split * chunk)
    if WHOLE:
        # whole blocks unmasked, the partly masked last block (if any) after them: it is last
        # in its program's order anyway, so every lane adds the same values in the same order.
        # Masked, each load compiles to zeroing its registers and a predicated load, and ptxas
        # kept only 1 (one-pass) or 2 (tree) of a thread's 4 loads per iteration in flight;
        # unmasked, all 4 (bench/sum_sass.py)
        whole = end - end % BLOCK
        ptrs = base + first + tl.arange(0, BLOCK)
        for _ in tl.range(first, whole, step):
            acc += tl.load(ptrs).to(tl.float32)
            ptrs += step
        tail = whole + tl.arange(0, BLOCK)
        if (first <= whole) and ((whole - first) % step == 0) and (whole < end):
            acc += tl.load(base + tail, mask=tail < end, other=0.0).to(tl.float32)
    else:
        for start in tl.range(first, end, step):
            offs = start + tl.arange(0, BLOCK)
            acc += tl.load(base + offs, mask=offs < end, other=0.0).to(tl.float32)
    return tl.sum(acc, axis=0)


@triton.jit
def _sum_partials(P, row, n_splits, BLOCK_S: tl.constexpr):
    # the row's partials in a fixed order. The order of tl.sum follows the register layout
    # (elements per thread, warps), so the tree's stage 2 and the one-pass kernel must compile
    # this with the same num_warps and the same divisibility of n_splits to agree bitwise
    offs = tl.arange(0, BLOCK_S)
    # .cg: from L2, never a stale L1 line (the one-pass kernel reads partials of other programs)
    p = tl.load(P + row * n_splits + offs, mask=offs < n_splits, other=0.0, cache_modifier=".cg")
    return tl.sum(p, axis=0)


@triton.jit
def _chunk_sum_kernel(
    X,
    P,
    OUT,
    COUNT,
    cols,
    stride_row,
    chunk,
    BLOCK: tl.constexpr,
    BLOCK_S: tl.constexpr,
    INTERLEAVE: tl.constexpr,
    WHOLE: tl.constexpr,
    ONEPASS: tl.constexpr,
):
    # program (row, split) writes its partial sum to P[row, split]; with one split P is the output.
    # ONEPASS: stage 1 and 2 of the tree in one launch: the program that finishes its chunk last
    # (the row's counter says so) sums the row's partials in a fixed order and resets the counter.
    # One kernel for both: one source for the streaming code. ptxas still schedules each build
    # whole, so the masked loop came out differently in the two (bench/sum_sass.py)
    row = tl.program_id(0)
    split = tl.program_id(1)
    n_splits = tl.num_programs(1)
    partial = _partial(X, row, split, n_splits, cols, stride_row, chunk, BLOCK, INTERLEAVE, WHOLE)
    tl.store(P + row * n_splits + split, partial)
    if ONEPASS:
        tl.debug_barrier()  # the partial is written before this program's arrival is counted
        arrived = tl.atomic_add(COUNT + row, 1, sem="acq_rel")  # release: the partial is visible
        if arrived == n_splits - 1:
            tl.store(OUT + row, _sum_partials(P, row, n_splits, BLOCK_S))
            tl.store(COUNT + row, 0)  # ready for the next launch (no host-side reset needed)


# n_splits unspecialized: in the one-pass kernel it is tl.num_programs(1), of unknown divisibility;
# a 16-divisible argument here (528) would let Triton vectorize the load and change the layout
@triton.jit(do_not_specialize=["n_splits"])
def _finalize_kernel(P, OUT, n_splits, BLOCK_S: tl.constexpr):
    # one program per row: the row's partials in the one-pass kernel's fixed order
    row = tl.program_id(0)
    tl.store(OUT + row, _sum_partials(P, row, n_splits, BLOCK_S))


@triton.jit
def _atomic_sum_kernel(
    X, OUT, cols, stride_row, BLOCK: tl.constexpr, WHOLE: tl.constexpr, ATOMIC: tl.constexpr
):
    # grid-stride: program s of a row reads blocks s, s + n_splits, s + 2 n_splits, ...: at any
    # moment the row's programs read neighbouring blocks, not n_splits distant streams
    row = tl.program_id(0)
    split = tl.program_id(1)
    n_splits = tl.num_programs(1)
    total = _partial(X, row, split, n_splits, cols, stride_row, 0, BLOCK, True, WHOLE)
    if ATOMIC:
        # relaxed: nothing else reads OUT inside this kernel; the launch boundary orders the rest
        tl.atomic_add(OUT + row, total, sem="relaxed")
    else:
        tl.store(OUT + row, total)


def launch_config(rows: int, cols: int, itemsize: int) -> tuple[int, int, int]:
    """(BLOCK, splits per row, num_warps) for a rows x cols sum.

    - BLOCK: 16 KB of input per loop iteration per program (fp32 4096, bf16 8192 elements),
      smaller for short rows so a program does not mostly load masked lanes.
    - num_warps: 16 lanes per thread (BLOCK / 512). The fp32 accumulator is BLOCK lanes wide, so
      this caps it at 16 registers a thread: bf16 at 8 warps held 32 and compiled to 62
      registers, half occupancy (bench/sm90_compile.py); at 16 per thread both dtypes compile
      to 32 registers and every SM holds 64 warps.
    - splits: enough programs per row that rows x splits fills one resident wave (4 programs
      per SM = 528): a sum is pure streaming, so all SMs must be reading. Never
      more splits than the row has blocks. With rows >= 528, one program per row (no partials).
      4 programs per SM x 16 KB = 64 KB of loads in flight per SM, about twice what one SM needs
      to draw its 1/132 share of 4.2 TB/s at ~1 us DRAM latency.
    """
    block = min(16384 // itemsize, max(128, triton.next_power_of_2(cols)))
    blocks_per_row = triton.cdiv(cols, block)
    splits = max(1, min(blocks_per_row, triton.cdiv(PROGRAMS_TARGET, rows)))
    num_warps = max(4, min(16, block // 512))
    return block, splits, num_warps


def _rows(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(1, -1) if x.dim() == 1 else x


# stage 1's block order for the tree and the one-pass kernel (probe both: bench/probe_memory.py)
INTERLEAVE = True


def whole_blocks(num_warps: int) -> bool:
    """Stage 1 loads whole blocks unmasked (all of a thread's loads of an iteration in flight).
    Unmasked, the loop compiles to 48-50 registers (sm_90, offline): 5 programs per SM at
    8 warps, enough for the 4-per-SM wave; at 16 warps (bf16) only 2, half the wave, so 16-warp
    launches keep the masked loop (32 registers, at 94.5% DRAM in run 4f4876)."""
    return num_warps <= 8


def _partition(cols: int, block: int, splits: int, interleave: bool) -> tuple[int, int]:
    """(splits, chunk): interleaved, each of `splits` programs strides over the row's blocks;
    contiguous, chunks of a whole number of blocks (only a row's last chunk is partly masked)."""
    if interleave:
        return splits, 0
    chunk = triton.cdiv(triton.cdiv(cols, splits), block) * block
    return triton.cdiv(cols, chunk), chunk


def _plan(x: torch.Tensor, config, interleave: bool | None, whole: bool | None) -> dict:
    """Launch of the tree's stage 1 and the one-pass kernel: one plan for both, so they
    partition (and so sum) the same way. `whole` only changes the code, never the sum."""
    rows, cols = x.shape
    block, splits, num_warps = config or launch_config(rows, cols, x.element_size())
    interleave = INTERLEAVE if interleave is None else interleave
    splits, chunk = _partition(cols, block, splits, interleave)
    whole = whole_blocks(num_warps) if whole is None else whole
    return dict(
        splits=splits,
        chunk=chunk,
        BLOCK=block,
        INTERLEAVE=interleave,
        WHOLE=whole,
        num_warps=num_warps,
    )


def sum_tree(
    inputs: dict,
    config: tuple[int, int, int] | None = None,
    interleave: bool | None = None,
    whole: bool | None = None,
) -> torch.Tensor:
    x, out = _rows(inputs["x"]), inputs["out"]
    rows = x.shape[0]
    plan = _plan(x, config, interleave, whole)
    splits = plan["splits"]
    partials = out if splits == 1 else torch.empty(rows * splits, device=x.device)
    _chunk_sums(x, partials, plan)
    if splits > 1:
        # stage 1's num_warps: the one-pass kernel's finalization runs at it (same sum order)
        block_s = triton.next_power_of_2(splits)
        warps = plan["num_warps"]
        _finalize_kernel[(rows,)](partials, out, splits, BLOCK_S=block_s, num_warps=warps)
    return out


def _chunk_sums(x, dest, plan: dict, out=None, count=None) -> None:
    """Stage 1: each (row, split) program sums its blocks into dest[row * splits + split]; with
    `out` and `count` (the one-pass kernel), the last program of a row also finalizes it."""
    rows, cols = x.shape
    plan = dict(plan)
    splits, chunk = plan.pop("splits"), plan.pop("chunk")
    onepass = out is not None
    block_s = triton.next_power_of_2(splits) if onepass else 1
    _chunk_sum_kernel[(rows, splits)](
        x, dest, out, count, cols, x.stride(0), chunk, BLOCK_S=block_s, ONEPASS=onepass, **plan
    )


_COUNTERS: dict[tuple[str, int], torch.Tensor] = {}


def _counters(device: torch.device, rows: int) -> torch.Tensor:
    """Per-row arrival counters for the one-pass kernel: zeroed once, reset by the kernel itself
    (so a call is one launch, also inside a CUDA graph: the first call, outside it, allocates)."""
    key = (str(device), rows)
    if key not in _COUNTERS:
        _COUNTERS[key] = torch.zeros(rows, dtype=torch.int32, device=device)
    return _COUNTERS[key]


def sum_onepass(
    inputs: dict,
    config: tuple[int, int, int] | None = None,
    interleave: bool | None = None,
    whole: bool | None = None,
) -> torch.Tensor:
    x, out = _rows(inputs["x"]), inputs["out"]
    rows = x.shape[0]
    plan = _plan(x, config, interleave, whole)
    if plan["splits"] == 1:  # one program per row: the chunk kernel writes the sums directly
        _chunk_sums(x, out, plan)
        return out
    partials = torch.empty(rows * plan["splits"], device=x.device)
    _chunk_sums(x, partials, plan, out, _counters(x.device, rows))
    return out


def sum_atomic(inputs: dict, config: tuple[int, int, int] | None = None) -> torch.Tensor:
    x, out = _rows(inputs["x"]), inputs["out"]
    rows, cols = x.shape
    block, splits, num_warps = config or launch_config(rows, cols, x.element_size())
    if splits > 1:
        out.zero_()  # the atomics add into it
    _atomic_sum_kernel[(rows, splits)](
        x,
        out,
        cols,
        x.stride(0),
        BLOCK=block,
        WHOLE=whole_blocks(num_warps),
        ATOMIC=splits > 1,
        num_warps=num_warps,
    )
    return out


def sum_torch(inputs: dict) -> torch.Tensor:
    return torch.sum(inputs["x"], dim=-1, dtype=torch.float32, out=inputs["out"])


def make_inputs(shape, dtype: str, device: str, generator: torch.Generator) -> dict:
    # mean 1, standard deviation 1: negative values and cancellation, but the sum stays near
    # cols (condition number sum|x| / |sum x| ~ 1.2), so a relative tolerance is meaningful;
    # with zero-mean data the exact sum is ~sqrt(cols) and any tolerance would be arbitrary
    dt = getattr(torch, dtype)
    x = (1 + torch.randn(shape, generator=generator, device=device, dtype=torch.float32)).to(dt)
    out = torch.empty(shape[:-1], device=device, dtype=torch.float32)
    return {"x": x, "out": out}


def reference(inputs: dict) -> torch.Tensor:
    return inputs["x"].double().sum(-1)


def _rows_cols(shape) -> tuple[int, int]:
    if len(shape) == 1:
        return 1, shape[0]
    if len(shape) != 2:  # capture reports it before any work
        raise ValueError("sum takes 1-D (N) or 2-D (ROWSxCOLS) shapes")
    return shape[0], shape[1]


def bytes_moved(shape, itemsize: int) -> int:
    rows, cols = _rows_cols(shape)
    return rows * cols * itemsize + rows * 4  # x once, one fp32 per row


def flops(shape) -> int:
    rows, cols = _rows_cols(shape)
    return rows * cols  # one add per element


SPEC = KernelSpec(
    name="sum",
    description="sum over the last dim (1-D -> scalar, 2-D -> row sums), fp32 accumulation",
    variants=(
        Variant("triton_tree", sum_tree, description="two-stage tree: chunk sums, finalize"),
        Variant(
            "triton_atomic",
            sum_atomic,
            description="one grid-stride pass, partial sums combined by fp32 atomics",
        ),
        Variant(
            "triton_onepass",
            sum_onepass,
            description="one launch: chunk sums, the last program to finish sums the partials",
        ),
        Variant("torch", sum_torch, baseline=True, description="torch.sum(x, -1, dtype=float32)"),
    ),
    make_inputs=make_inputs,
    reference=reference,
    dtypes=("float32", "bfloat16"),
    # 1-D 2^16 (launch-bound) .. 2^30 (4 GB in fp32); row sums: many short rows, the
    # 16384x8192 prefill size, and a few very long rows (one row needs several programs)
    # (2^16, 2^20, 2^24, 2^28, 2^30, written out: `profkit list` reads these literals without
    # importing torch)
    shapes=(
        (65536,),
        (1048576,),
        (16777216,),
        (268435456,),
        (1073741824,),
        (4096, 4096),
        (16384, 8192),
        (32, 1048576),
    ),
    # Same for both dtypes: the inputs are exact in fp32 either way, so only fp32 accumulation
    # errs. Worst case at 2^30 fp32: 496 adds per lane, a 12-level tree over 4096 lanes, then
    # 528 partials added in sequence (the atomics), each rounding <= 2^-24 of a partial sum
    # bounded by ~1.2 x the result: ~6e-5 relative. Roundings are random, not aligned: expect
    # ~1e-7..1e-6 (interpreter, small shapes: 1e-8..1e-7). rtol 1e-5 allows 10x the expected
    # worst and still fails a kernel that drops one 16 KB block of a 2^26-element input.
    tolerances={"float32": (1e-6, 1e-5), "bfloat16": (1e-6, 1e-5)},
    bytes_moved=bytes_moved,
    flops=flops,
    interpret_shapes=((5000,), (1 << 16,), (3, 5000), (2, 100)),
)

"""Pathology zoo, memory: each spec has one deliberate memory-side cause, or is its healthy twin.

Sizes are for the H200 (132 SMs, 60 MB L2, 4.8 TB/s HBM): a DRAM case's data is several times
the L2, and each launch runs for 30 us - 2 ms. What an expert concludes from each is written in
zoo/EXPECTED, before any capture. bytes_moved is the minimum traffic at DRAM (each input read
once, each output written once); a cache-level case says in its comment what its caches see.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from profkit.spec import KernelSpec, Variant


def _randn(shape, dtype: str, device: str, gen: torch.Generator) -> torch.Tensor:
    return torch.randn(shape, generator=gen, device=device).to(getattr(torch, dtype))


# --- a healthy DRAM stream: y = 2x with 128-bit loads ------------------------------------------


@triton.jit
def _scale_kernel(X, Y, n, BLOCK: tl.constexpr):
    # 2048 fp32 per program over 4 warps: 16 per thread, four 128-bit loads (n % 16 == 0 and
    # torch's 16-byte-aligned tensors let Triton vectorize)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(Y + offs, tl.load(X + offs, mask=mask) * 2.0, mask=mask)


def scale(inputs: dict) -> torch.Tensor:
    x, y = inputs["x"], inputs["out"]
    n = x.numel()
    _scale_kernel[(triton.cdiv(n, 2048),)](x, y, n, BLOCK=2048, num_warps=4)
    return y


def stream_inputs(shape, dtype, device, gen) -> dict:
    x = _randn(shape, dtype, device, gen)
    return {"x": x, "out": torch.empty_like(x)}


ZOO_STREAM = KernelSpec(
    name="zoo_stream",
    description="zoo: y = 2x over 256 MB, 128-bit loads: a healthy DRAM stream",
    variants=(Variant("scale", scale, description="Triton, 2048 fp32 per program, 4 warps"),),
    make_inputs=stream_inputs,
    reference=lambda i: 2.0 * i["x"].double(),
    dtypes=("float32",),
    shapes=((1 << 26,),),  # 256 MB in, 256 MB out: about 120 us at the copy roof
    tolerances={"float32": (0.0, 0.0)},
    bytes_moved=lambda s, size: 2 * s[0] * size,
    flops=lambda s: s[0],
    interpret_shapes=((4096,), (1000,)),
)


# --- L2 bandwidth: a 16 MB table re-read REUSE times, L1 bypassed -------------------------------


@triton.jit
def _l2_reread_kernel(T, Y, n_blocks, REUSE: tl.constexpr, BLOCK: tl.constexpr):
    # program p sums blocks p, p+7, p+14, ... (mod the table's blocks) of a table that fits in
    # L2: DRAM reads it about once, L2 serves every re-read. Loads are .cg (L2 only), so L1 cannot
    # absorb the reuse; each block is contiguous, so the loads stay 128-bit and coalesced.
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for r in range(REUSE):
        block = (pid + r * 7) % n_blocks
        acc += tl.load(T + block * BLOCK + cols, cache_modifier=".cg")
    tl.store(Y + pid * BLOCK + cols, acc)


L2_BLOCK = 1024


def l2_reread(inputs: dict) -> torch.Tensor:
    t, y = inputs["table"], inputs["out"]
    n_blocks = t.numel() // L2_BLOCK
    reuse = inputs["reuse"]
    _l2_reread_kernel[(n_blocks,)](t, y, n_blocks, REUSE=reuse, BLOCK=L2_BLOCK, num_warps=4)
    return y


def l2_inputs(shape, dtype, device, gen) -> dict:
    n, reuse = shape
    t = _randn((n,), dtype, device, gen)
    return {"table": t, "reuse": reuse, "out": torch.empty_like(t)}


def l2_reference(inputs: dict) -> torch.Tensor:
    t = inputs["table"].double().reshape(-1, L2_BLOCK)
    n_blocks = t.shape[0]
    p = torch.arange(n_blocks, device=t.device)
    return sum(t[(p + r * 7) % n_blocks] for r in range(inputs["reuse"])).reshape(-1)


ZOO_L2_BOUND = KernelSpec(
    name="zoo_l2_bound",
    description="zoo: a 16 MB table (fits in L2) re-read 64 times through L2-only loads",
    variants=(Variant("reread", l2_reread, description="Triton, .cg loads, 64 re-reads"),),
    make_inputs=l2_inputs,
    reference=l2_reference,
    dtypes=("float32",),
    # 4M fp32 = 16 MB table, 64 reads each: 1 GB through L2 (~100 us), ~32 MB at DRAM
    shapes=((1 << 22, 64),),
    tolerances={"float32": (1e-4, 1e-5)},
    bytes_moved=lambda s, size: 2 * s[0] * size,  # the table once, the output once
    flops=lambda s: s[0] * s[1],
    interpret_shapes=((4096, 3), (2048, 5)),
)


# --- L2-resident reuse: each row read twice, the second time from L2 ----------------------------


@triton.jit
def _two_pass_kernel(X, Y, n_cols, eps, BLOCK: tl.constexpr):
    # y = x / rms(x) per row, the row walked twice in BLOCK-wide chunks: the first pass marks it
    # evict_last, and with ~1000 rows of 32 KB in flight (34 MB) the second pass finds it in L2.
    # DRAM reads x once; L2 serves it twice (the healthy design, as rmsnorm's v4 halves).
    row = tl.program_id(0).to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for c in range(0, n_cols, BLOCK):
        x = tl.load(X + row + c + cols, eviction_policy="evict_last")
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc) / n_cols + eps)
    for c in range(0, n_cols, BLOCK):
        x = tl.load(X + row + c + cols, eviction_policy="evict_first")
        tl.store(Y + row + c + cols, x * rstd)


def two_pass(inputs: dict) -> torch.Tensor:
    x, y = inputs["x"], inputs["out"]
    rows, cols = x.shape
    block = min(2048, cols)
    _two_pass_kernel[(rows,)](x, y, cols, 1e-6, BLOCK=block, num_warps=8)
    return y


def rms_reference(inputs: dict) -> torch.Tensor:
    x = inputs["x"].double()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


ZOO_L2_REUSE = KernelSpec(
    name="zoo_l2_reuse",
    description="zoo: rows normalized in two passes, the second read served from L2",
    variants=(Variant("two_pass", two_pass, description="Triton, 2 passes of 2048-wide chunks"),),
    make_inputs=stream_inputs,
    reference=rms_reference,
    dtypes=("float32",),
    shapes=((8192, 8192),),  # 256 MB; rows of 32 KB
    tolerances={"float32": (1e-5, 1e-5)},
    bytes_moved=lambda s, size: 2 * s[0] * s[1] * size,  # x once at DRAM (its re-read is L2's)
    flops=lambda s: 3 * s[0] * s[1],
    interpret_shapes=((4, 64), (3, 4096)),
)


# --- L1 bandwidth: each program re-reads its own 8 KB through L1 -------------------------------


@triton.jit
def _l1_reread_kernel(X, Y, REUSE: tl.constexpr, WINDOW: tl.constexpr, BLOCK: tl.constexpr):
    # program p re-reads its own WINDOW-element window REUSE times, starting 128 elements further
    # on each time (wrapping): the window (8 KB) stays in L1, so the loads are L1 hits. The shifts
    # make no two iterations' loads the same (nothing for the compiler to hoist); the hints keep
    # them 128-bit (runs of 4 aligned elements survive the wrap).
    pid = tl.program_id(0)
    base = X + pid * WINDOW
    lanes = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for r in range(REUSE):
        idx = (lanes + r * 128) % WINDOW
        idx = tl.max_contiguous(tl.multiple_of(idx, 4), 4)
        acc += tl.load(base + idx)
    tl.store(Y + pid * BLOCK + lanes, acc)


L1_WINDOW, L1_BLOCK = 2048, 1024


def l1_reread(inputs: dict) -> torch.Tensor:
    x, y = inputs["x"], inputs["out"]
    programs = x.numel() // L1_WINDOW
    _l1_reread_kernel[(programs,)](
        x, y, REUSE=inputs["reuse"], WINDOW=L1_WINDOW, BLOCK=L1_BLOCK, num_warps=4
    )
    return y


def l1_inputs(shape, dtype, device, gen) -> dict:
    n, reuse = shape
    x = _randn((n,), dtype, device, gen)
    return {"x": x, "reuse": reuse, "out": torch.empty(n // 2, device=device, dtype=x.dtype)}


def l1_reference(inputs: dict) -> torch.Tensor:
    x = inputs["x"].double().reshape(-1, L1_WINDOW)
    lanes = torch.arange(L1_BLOCK, device=x.device)
    out = torch.zeros(x.shape[0], L1_BLOCK, dtype=torch.float64, device=x.device)
    for r in range(inputs["reuse"]):
        out += x[:, (lanes + r * 128) % L1_WINDOW]
    return out.reshape(-1)


ZOO_L1_BOUND = KernelSpec(
    name="zoo_l1_bound",
    description="zoo: each program re-reads its own 8 KB window 512 times (L1 hits)",
    variants=(Variant("reread", l1_reread, description="Triton, 512 shifted re-reads of 8 KB"),),
    make_inputs=l1_inputs,
    reference=l1_reference,
    dtypes=("float32",),
    # 2^22 fp32 (16 MB, 2048 programs, all resident at once: ~124 KB of windows per SM): 512
    # reads of 4 KB per program, 4 GB through L1 (~130 us at 128 B/clock/SM), 24 MB at DRAM
    shapes=((1 << 22, 512),),
    tolerances={"float32": (1e-4, 1e-5)},
    bytes_moved=lambda s, size: s[0] * size + s[0] // 2 * size,
    flops=lambda s: s[0] // 2 * s[1],
    interpret_shapes=((4096, 3), (2048, 20)),
)


# --- memory latency: a dependent pointer chase, 4224 chains ------------------------------------


@triton.jit
def _chase_kernel(NXT, START, OUT, steps, LANES: tl.constexpr):
    # each lane follows its own chain through a random single-cycle permutation of 256 MB: every
    # load's address is the previous load's value, so a warp has one load in flight per lane and
    # waits a full DRAM latency per step. 132 programs of one warp: 4224 loads in flight GPU-wide.
    offs = tl.program_id(0) * LANES + tl.arange(0, LANES)
    cur = tl.load(START + offs)
    for _ in range(steps):
        cur = tl.load(NXT + cur)
    tl.store(OUT + offs, cur)


CHAINS = 132 * 32


def chase(inputs: dict) -> torch.Tensor:
    out = inputs["out"]
    _chase_kernel[(CHAINS // 32,)](
        inputs["nxt"], inputs["start"], out, inputs["steps"], LANES=32, num_warps=1
    )
    return out


def chase_inputs(shape, dtype, device, gen) -> dict:
    n, steps = shape
    perm = torch.randperm(n, generator=gen, device=device)
    nxt = torch.empty(n, dtype=torch.int64, device=device)
    nxt[perm] = torch.roll(perm, -1)  # one cycle through all n entries
    start = torch.randint(0, n, (CHAINS,), generator=gen, device=device)
    return {
        "nxt": nxt.to(torch.int32),
        "start": start.to(torch.int32),
        "steps": steps,
        "out": torch.full((CHAINS,), -1, dtype=torch.int32, device=device),
    }


def chase_reference(inputs: dict) -> torch.Tensor:
    nxt, cur = inputs["nxt"].long(), inputs["start"].long()
    for _ in range(inputs["steps"]):
        cur = nxt[cur]
    return cur.double()


ZOO_LATENCY = KernelSpec(
    name="zoo_latency",
    description="zoo: 4224 dependent pointer chases through 256 MB: one load in flight per lane",
    variants=(Variant("chase", chase, description="Triton, 132 programs x 32 chains"),),
    make_inputs=chase_inputs,
    reference=chase_reference,
    dtypes=("int32",),
    # 2^26 int32 = 256 MB; 1000 dependent steps at ~0.6-0.9 us each: about 0.6-0.9 ms
    shapes=((1 << 26, 1000),),
    tolerances={"int32": (0.0, 0.0)},
    # the useful bytes: one 4-byte word per step per chain (each costs a 32-byte sector)
    bytes_moved=lambda s, size: CHAINS * (s[1] + 2) * size,
    flops=lambda s: 0,
    interpret_shapes=((1000, 5), (64, 3)),
)


# --- uncoalesced: y[i] = x[16 i]; its twin reads the same values packed ----------------------

STRIDE = 16  # fp32 64 bytes apart: each lane's 4 bytes alone in their 32-byte sector


@triton.jit
def _strided_kernel(X, Y, n, STRIDE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(Y + offs, tl.load(X + offs.to(tl.int64) * STRIDE, mask=mask), mask=mask)


def strided(inputs: dict) -> torch.Tensor:
    y = inputs["out"]
    n = y.numel()
    _strided_kernel[(triton.cdiv(n, 1024),)](inputs["x"], y, n, STRIDE=STRIDE, BLOCK=1024)
    return y


def packed(inputs: dict) -> torch.Tensor:
    # the layout fix: the same values stored contiguously (packed once, outside the timed call)
    y = inputs["out"]
    n = y.numel()
    _strided_kernel[(triton.cdiv(n, 1024),)](inputs["packed"], y, n, STRIDE=1, BLOCK=1024)
    return y


def strided_inputs(shape, dtype, device, gen) -> dict:
    (n,) = shape
    x = _randn((n * STRIDE,), dtype, device, gen)
    return {
        "x": x,
        "packed": x[::STRIDE].contiguous(),
        "out": torch.empty(n, device=device, dtype=x.dtype),
    }


ZOO_STRIDED = KernelSpec(
    name="zoo_strided",
    description="zoo: y = x[::16], an uncoalesced strided read; its twin reads the values packed",
    variants=(
        Variant("strided", strided, description="Triton, lane i reads x[16 i]"),
        Variant("packed", packed, description="Triton, the same values read contiguously"),
    ),
    make_inputs=strided_inputs,
    reference=lambda i: i["x"].double()[::STRIDE],
    dtypes=("float32",),
    # n = 2^24: x is 1 GB; the strided read fetches 512 MB of sectors for 64 MB used (~120 us);
    # the packed twin moves 128 MB (~30 us)
    shapes=((1 << 24,),),
    tolerances={"float32": (0.0, 0.0)},
    bytes_moved=lambda s, size: 2 * s[0] * size,  # each output element read once, written once
    flops=lambda s: 0,
    interpret_shapes=((1000,), (64,)),
)


# --- random gather, and the same bytes gathered as 256-byte rows ------------------------------


@triton.jit
def _gather_kernel(X, IDX, Y, n_idx, WIDTH: tl.constexpr, ROWS: tl.constexpr):
    # y[i, :] = x[idx[i], :]: with WIDTH 1 each lane reads 4 bytes at a random address (a whole
    # sector for 4 bytes); with WIDTH 64 a row is 256 contiguous bytes, whole sectors used
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    ok = r < n_idx
    rows = tl.load(IDX + r, mask=ok, other=0).to(tl.int64)
    cols = tl.arange(0, WIDTH)
    vals = tl.load(X + rows[:, None] * WIDTH + cols[None, :], mask=ok[:, None])
    tl.store(Y + r.to(tl.int64)[:, None] * WIDTH + cols[None, :], vals, mask=ok[:, None])


def gather(inputs: dict) -> torch.Tensor:
    x, idx, y = inputs["x"], inputs["idx"], inputs["out"]
    n_idx, width = y.shape
    rows = 1024 // width
    _gather_kernel[(triton.cdiv(n_idx, rows),)](x, idx, y, n_idx, WIDTH=width, ROWS=rows)
    return y


def gather_inputs(shape, dtype, device, gen) -> dict:
    n_idx, width = shape
    table_rows = 4 * n_idx  # the table is 4x the gathered bytes: 256 MB at both shapes
    x = _randn((table_rows, width), dtype, device, gen)
    idx = torch.randint(0, table_rows, (n_idx,), generator=gen, device=device, dtype=torch.int32)
    return {"x": x, "idx": idx, "out": torch.empty((n_idx, width), device=device, dtype=x.dtype)}


ZOO_GATHER = KernelSpec(
    name="zoo_gather",
    description="zoo: y = x[idx] with random idx: 4-byte elements, and 256-byte rows",
    variants=(Variant("gather", gather, description="Triton, 1024 elements per program"),),
    make_inputs=gather_inputs,
    reference=lambda i: i["x"].double()[i["idx"].long()],
    dtypes=("float32",),
    # 2^24 random 4-byte reads from a 256 MB table (a sector each); the same 64 MB as 2^18 rows
    shapes=((1 << 24, 1), (1 << 18, 64)),
    tolerances={"float32": (0.0, 0.0)},
    bytes_moved=lambda s, size: 2 * s[0] * s[1] * size + 4 * s[0],  # rows read, written; idx
    flops=lambda s: 0,
    interpret_shapes=((1000, 1), (40, 64)),
)


# --- register spills: a whole 16384-wide row per program on one warp --------------------------


@triton.jit
def _row_norm_kernel(X, Y, n_cols, eps, BLOCK: tl.constexpr):
    # the whole row is held across the reduction: BLOCK / (32 x num_warps) values per thread.
    # One warp holds 512 fp32 per thread, twice the 255-register limit: ptxas spills ~1.5 KB per
    # thread to local memory (zoo/sm90_check.py). Sixteen warps hold 32 each, in registers.
    row = tl.program_id(0).to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + row + cols, mask=cols < n_cols, other=0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x) / n_cols + eps)
    tl.store(Y + row + cols, x * rstd, mask=cols < n_cols)


def row_norm(inputs: dict, warps: int) -> torch.Tensor:
    x, y = inputs["x"], inputs["out"]
    rows, cols = x.shape
    _row_norm_kernel[(rows,)](x, y, cols, 1e-6, BLOCK=triton.next_power_of_2(cols), num_warps=warps)
    return y


ZOO_SPILLS = KernelSpec(
    name="zoo_spills",
    description="zoo: row RMS-scale, the whole 16384-wide row on 1 warp (spills) or 16",
    variants=(
        Variant("one_warp", lambda i: row_norm(i, 1), description="512 fp32 per thread: spills"),
        Variant("sixteen_warps", lambda i: row_norm(i, 16), description="32 per thread"),
    ),
    make_inputs=stream_inputs,
    reference=rms_reference,
    dtypes=("float32",),
    shapes=((4096, 16384),),  # 256 MB in, 256 MB out
    tolerances={"float32": (1e-5, 1e-5)},
    bytes_moved=lambda s, size: 2 * s[0] * s[1] * size,
    flops=lambda s: 3 * s[0] * s[1],
    interpret_shapes=((4, 64), (3, 100)),
)

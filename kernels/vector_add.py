"""Vector add: out = x + y, 1-D, the lab's pure streaming kernel.

The Triton kernel against torch.add(out=). Minimum traffic: read x and y once, write out once,
3 n itemsize bytes, and one FLOP per element: a copy-bandwidth test with a launch in front.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from profkit.spec import KernelSpec, Variant


@triton.jit
def _add_kernel(X, Y, OUT, n, BLOCK: tl.constexpr, HINTS: tl.constexpr, CS_STORE: tl.constexpr):
    pid = tl.program_id(0)
    # one 64-bit base per program, 32-bit offsets inside it (2^28 fp32 elements is 1 GiB: the
    # element index still fits in int32, but the byte offsets of larger inputs would not)
    base = pid.to(tl.int64) * BLOCK
    offs = tl.arange(0, BLOCK)
    mask = offs < n - base
    # HINTS: every byte is touched once, so ask L2 to evict inputs first and stream the output
    # (.cs: evict-first store) rather than keep lines no one rereads
    if HINTS:
        x = tl.load(X + base + offs, mask=mask, eviction_policy="evict_first")
        y = tl.load(Y + base + offs, mask=mask, eviction_policy="evict_first")
    else:
        x = tl.load(X + base + offs, mask=mask)
        y = tl.load(Y + base + offs, mask=mask)
    # fp32 math for every dtype: the same single rounding as torch.add, and the interpreter's
    # bf16 arithmetic is broken (load -> fp32 -> store is what it runs correctly)
    out = (x.to(tl.float32) + y.to(tl.float32)).to(OUT.dtype.element_ty)
    # CS_STORE (session 6 probe): the streaming store alone, loads left at the default policy
    if HINTS or CS_STORE:
        tl.store(OUT + base + offs, out, mask=mask, cache_modifier=".cs")
    else:
        tl.store(OUT + base + offs, out, mask=mask)


@triton.jit
def _add_persistent_kernel(X, Y, OUT, n, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    # a few programs per SM walk the tiles grid-stride: no per-tile launch or retire, and the
    # grid ends in one short wave instead of a ragged tail of thousands of programs
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    for t in tl.range(pid, tl.cdiv(n, BLOCK), tl.num_programs(0), num_stages=STAGES):
        base = tl.cast(t, tl.int64) * BLOCK  # tl.cast: the interpreter hands t over as an int
        mask = offs < n - base
        x = tl.load(X + base + offs, mask=mask)
        y = tl.load(Y + base + offs, mask=mask)
        tl.store(OUT + base + offs, (x.to(tl.float32) + y.to(tl.float32)).to(x.dtype), mask=mask)


@triton.jit
def _add_tma_kernel(XD, YD, OD, BM: tl.constexpr):
    # one [BM, C] box per operand through the TMA engine (rows past the end load as zeros and
    # are not stored): whole 16 KB bursts per request instead of 16-byte vectors per thread
    row = tl.program_id(0) * BM
    x = XD.load([row, 0])
    y = YD.load([row, 0])
    OD.store([row, 0], (x.to(tl.float32) + y.to(tl.float32)).to(x.dtype))


def launch_config(n: int, itemsize: int) -> tuple[int, int]:
    """(BLOCK, num_warps) for n elements: torch.add's own shape, 1024 elements per 128-thread
    program, at every size (v2, session 3).

    v1 held 16 KB of each operand per 8-warp program (more bytes in flight per thread, the
    prediction's lever) and ran 0.4-1.1% behind torch.add from 2^26 up (run ef4521). Side by side
    in bench/probe_memory.py (bench/results/h200-20261130-s3/memprobe/) torch's shape ran at
    1.000-1.003 of torch.add against v1's 1.004-1.011: many small programs stream as well as a few
    large ones, and retire without a tail. The small sizes keep a grid of their own (2^16: 64
    programs, as torch.add's).
    """
    return 1024, 4


# streaming cache hints on the loads and the store (probe both: bench/probe_memory.py)
HINTS = False


def add_triton(
    inputs: dict,
    config: tuple[int, int] | None = None,
    hints: bool | None = None,
    cs_store: bool = False,
) -> torch.Tensor:
    x, y, out = inputs["x"], inputs["y"], inputs["out"]
    n = x.numel()
    block, num_warps = config or launch_config(n, x.element_size())
    hints = HINTS if hints is None else hints
    _add_kernel[(triton.cdiv(n, block),)](
        x, y, out, n, BLOCK=block, HINTS=hints, CS_STORE=cs_store, num_warps=num_warps
    )
    return out


# --- session 6 candidates (bench/probe_vadd6.py); none is the shipped default --------------------


def add_persistent(
    inputs: dict, block: int = 2048, num_warps: int = 4, per_sm: int = 8, stages: int = 1
) -> torch.Tensor:
    """Grid-stride: min(tiles, per_sm * SMs) programs; stages > 1 asks Triton's pipeliner to
    keep that many tiles' loads in flight per program."""
    x, y, out = inputs["x"], inputs["y"], inputs["out"]
    n = x.numel()
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else 2
    grid = max(1, min(triton.cdiv(n, block), per_sm * sms))
    _add_persistent_kernel[(grid,)](x, y, out, n, BLOCK=block, STAGES=stages, num_warps=num_warps)
    return out


TMA_ROW_BYTES = 128  # a box row of 128 bytes: the widest a 128-byte-swizzled TMA box may be


def add_tma(inputs: dict, box_bytes: int = 16384, num_warps: int = 4) -> torch.Tensor:
    """x, y and out seen as [n / C, C] (C * itemsize = 128 bytes), one box_bytes box per operand
    per program; the n % C elements past the last full row go through the plain kernel."""
    x, y, out = inputs["x"], inputs["y"], inputs["out"]
    n = x.numel()
    cols = TMA_ROW_BYTES // x.element_size()
    rows = n // cols
    bm = box_bytes // TMA_ROW_BYTES
    if rows:
        descs = [
            TensorDescriptor.from_tensor(t[: rows * cols].view(rows, cols), [bm, cols])
            for t in (x, y, out)
        ]
        _add_tma_kernel[(triton.cdiv(rows, bm),)](*descs, BM=bm, num_warps=num_warps)
    if rows * cols < n:
        tail = {k: inputs[k][rows * cols :] for k in ("x", "y", "out")}
        add_triton(tail, (1024, 4), hints=False)
    return out


def add_torch(inputs: dict) -> torch.Tensor:
    return torch.add(inputs["x"], inputs["y"], out=inputs["out"])


def make_inputs(shape, dtype: str, device: str, generator: torch.Generator) -> dict:
    dt = getattr(torch, dtype)
    x = torch.randn(shape, generator=generator, device=device, dtype=torch.float32).to(dt)
    y = torch.randn(shape, generator=generator, device=device, dtype=torch.float32).to(dt)
    return {"x": x, "y": y, "out": torch.empty_like(x)}


def reference(inputs: dict) -> torch.Tensor:
    return inputs["x"].double() + inputs["y"].double()


def _numel(shape) -> int:
    # 1-D only: any other shape is an input error, reported by capture before any work
    if len(shape) != 1:
        raise ValueError("vector_add takes 1-D shapes N, e.g. 16777216")
    return shape[0]


SPEC = KernelSpec(
    name="vector_add",
    description="out = x + y, 1-D, against torch.add(out=)",
    variants=(
        Variant(
            "triton",
            add_triton,
            description="Triton, 1024 elements per 128-thread program (torch.add's shape)",
        ),
        Variant("torch", add_torch, baseline=True, description="torch.add(x, y, out=out)"),
    ),
    make_inputs=make_inputs,
    reference=reference,
    dtypes=("float32", "float16", "bfloat16"),
    # 2^16 (launch-bound: 0.8 MB in fp32), 2^20, 2^24, 2^26, 2^28 (3 GB in fp32, ~0.76 ms at
    # copy bandwidth), written out: `profkit list` reads these literals without importing torch
    shapes=((65536,), (1048576,), (16777216,), (67108864,), (268435456,)),
    # one rounding of the exact sum to the output type: half an ulp (fp32 2^-24, fp16 2^-11,
    # bf16 2^-8 relative); the interpreter truncates fp32 -> bf16, a whole bf16 ulp (2^-7)
    tolerances={"float32": (1e-6, 1e-6), "float16": (1e-5, 1e-3), "bfloat16": (1e-5, 1e-2)},
    bytes_moved=lambda shape, itemsize: 3 * _numel(shape) * itemsize,
    flops=lambda shape: _numel(shape),
    interpret_shapes=((1000,), (4096,), (5000,)),
)

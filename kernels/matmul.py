"""Matmul C = A @ B, bf16/fp16 in, fp32 accumulation, output in the input dtype.

Shape convention: MxNxK. A is M x K, B is K x N, C is M x N, all row-major and contiguous
("4096x14336x4096" is M=4096, N=14336, K=4096: a Llama-style up projection of 4096 tokens).

Two Triton variants against cuBLAS (torch.matmul(out=)):
- triton: the standard tiled kernel, one output tile per program, pointer loads pipelined by
  Triton's software pipeliner (num_stages), tiles in grouped order for L2 reuse.
- persistent: one program per SM loops over output tiles; A, B and C are accessed through
  tensor descriptors (tl.make_tensor_descriptor: TMA on Hopper), so tile loads are issued by the
  TMA unit rather than by every thread, and the epilogue's store of one tile can overlap the
  next tile's loads.
Designs measured and removed (split-K with a reduce launch or in-kernel, the tiled kernel's TMA
loads, a rotated K walk, two persistent programs per SM): kernels/NOTES.md, "Designs removed from
the tree".
Warp specialization: Triton 3.6 offers it only as tl.range(warp_specialize=True), documented
for Blackwell. Compiled for sm_90 (bench/sm90_compile.py, no GPU needed), the persistent kernel
with WS=True gives byte-identical PTX to WS=False: on the H200 it is the same kernel, so it is not
a variant here (the WS knob stays so the check can be rerun when Triton changes).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from profkit.spec import KernelSpec, Variant

SMS = 132  # H200


@triton.jit
def _tile_coords(tile, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    # grouped order: GROUP_M consecutive tile rows advance along N together, so the B columns
    # they share (and their A rows) are still in L2 when the neighbours need them
    width = GROUP_M * num_pid_n
    first_m = (tile // width) * GROUP_M
    size_m = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (tile % width) % size_m
    pid_n = (tile % width) // size_m
    return pid_m, pid_n


@triton.jit
def _matmul_tiled_kernel(
    A,
    B,
    C,
    M,
    N,
    K,
    stride_am,
    stride_bk,
    stride_cm,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP_M: tl.constexpr,
    EVEN: tl.constexpr,
    WIDEN: tl.constexpr,
):
    pid_m, pid_n = _tile_coords(tl.program_id(0), tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP_M)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    if EVEN:
        # every tile is whole: no masks, and the hints let B's rows load as 16-byte vectors
        rn = tl.max_contiguous(tl.multiple_of(rn, BN), BN)
        am, bn = rm, rn
    else:
        # rows/columns past the edge wrap onto valid ones (loads stay unmasked along M and N);
        # those results are never stored
        am, bn = rm % M, rn % N
    k_tiles = tl.cdiv(K, BK)
    a_ptrs = A + am[:, None] * stride_am + rk[None, :]
    b_ptrs = B + rk[:, None] * stride_bk + bn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, k_tiles):
        if EVEN:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0)
            b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0)
        if WIDEN:  # the interpreter only (see _widen)
            a, b = a.to(tl.float32), b.to(tl.float32)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    c = acc.to(C.dtype.element_ty)
    c_ptrs = C + rm[:, None] * stride_cm + rn[None, :]
    if EVEN:
        tl.store(c_ptrs, c)
    else:
        tl.store(c_ptrs, c, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def _matmul_persistent_kernel(
    A,
    B,
    C,
    M,
    N,
    K,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP_M: tl.constexpr,
    NUM_PROGRAMS: tl.constexpr,
    SUBTILE: tl.constexpr,
    WS: tl.constexpr,
    WIDEN: tl.constexpr,
    B_KMAJOR: tl.constexpr = False,  # B given as B^T (N x K row-major): fp8 wgmma wants K-major
    SA=None,  # with SB: per-tensor scales (fp32 scalars), applied to the fp32 accumulator
    SB=None,
):
    # TMA descriptors: bounds are handled by the hardware (out-of-range loads read zeros,
    # out-of-range stores are dropped), so no masks at any shape
    a_desc = tl.make_tensor_descriptor(A, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    if B_KMAJOR:
        b_desc = tl.make_tensor_descriptor(B, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    else:
        b_desc = tl.make_tensor_descriptor(B, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(
        C, shape=[M, N], strides=[N, 1], block_shape=[BM, BN // SUBTILE]
    )
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    # the epilogue keeps its own tile counter: Triton's tutorial notes its pipeliner cannot
    # share one value between a flattened loop's prologue and epilogue
    tile_c = tl.program_id(0) - NUM_PROGRAMS
    for tile in tl.range(
        tl.program_id(0), num_pid_m * num_pid_n, NUM_PROGRAMS, flatten=True, warp_specialize=WS
    ):
        pid_m, pid_n = _tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([pid_m * BM, ki * BK])
            if B_KMAJOR:
                b = b_desc.load([pid_n * BN, ki * BK]).T
            else:
                b = b_desc.load([ki * BK, pid_n * BN])
            if WIDEN:  # the interpreter only (see _widen)
                a, b = a.to(tl.float32), b.to(tl.float32)
            acc = tl.dot(a, b, acc)
        tile_c += NUM_PROGRAMS
        pid_m, pid_n = _tile_coords(tile_c, num_pid_m, num_pid_n, GROUP_M)
        if SA is not None:
            acc = acc * (tl.load(SA) * tl.load(SB))
        if SUBTILE == 2:
            # two BM x BN/2 stores: half the shared memory for the epilogue's staging buffer,
            # which the pipeline can spend on stages instead
            halves = tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1))
            c0, c1 = tl.split(halves)
            c_desc.store([pid_m * BM, pid_n * BN], c0.to(C.dtype.element_ty))
            c_desc.store([pid_m * BM, pid_n * BN + BN // 2], c1.to(C.dtype.element_ty))
        else:
            c_desc.store([pid_m * BM, pid_n * BN], acc.to(C.dtype.element_ty))


@dataclass(frozen=True)
class Config:
    """A launch of either kernel: BM x BN x BK tiles, GROUP_M tile rows advancing together
    (grouped order), the pipeline's stages and the warps per program. subtile (persistent kernel
    only): the epilogue stores each tile in that many column pieces (2 halves its staging
    buffer)."""

    bm: int
    bn: int
    bk: int
    group_m: int
    stages: int
    warps: int
    subtile: int = 1


# Decode-like shapes (M <= 128), keyed by M rounded up to a power of two (16..128); entries from
# the probes on the H200 (bench/probe_matmul*.py, kernels/NOTES.md). The kernel streams B (K x N,
# 128 MB at N = K = 8192) from DRAM once, and every N tile re-reads all of A (M x K) from L2:
# one wave of 128 programs (BN 64), 8 stages of BK 64, no split-K, is the best found at every M.
# Split-K (a reduce launch, or the in-kernel last-arriver reduction), TMA loads, 2 programs per
# SM and BN 128 all measured slower (session 6: 80-88% of cuBLAS at M = 128). At M = 128 A's
# re-reads are 256 MB on top of B's 128 MB, and the L2 runs at 82% of its peak (run 250e7d).
DECODE = {
    16: Config(16, 64, 128, 8, 4, 4),  # 34.6 us, 91% of copy, a tie with cuBLAS (run cac0)
    # session 6 probes (bench/results/h200-20261201-s6/call1, call2): BK 64 and 8 stages at
    # M = 32 and 64, one 128-program wave with no split-K. M = 32: 33.8 / 33.7 us, 100.4 /
    # 101.0% of cuBLAS (bf16 / fp16) against 32x64x128 s4's 38.7 / 38.7 (87.6 / 88.1%); M = 64:
    # 35.1 / 35.2 us, 98.9 / 98.3% against the split-K 4 entry's 38.5 / 38.2 (90.0 / 90.5%)
    32: Config(32, 64, 64, 8, 8, 4),
    64: Config(64, 64, 64, 8, 8, 4),
    # session 4 probe (bench/results/h200-20261130-s4/r/matmul): 8 stages of B, no split-K,
    # 39.0 / 39.0 us, 92.0 / 92.9% of cuBLAS (bf16 / fp16) against split-K's 43.9 / 43.6
    128: Config(128, 64, 64, 8, 8, 4),
}
# the persistent kernel has no split-K: without it BN = 128 leaves 64 programs (70 us at M = 128
# in the probe); BN = 64 keeps 128 of them (49 us in run cac0)
PERSISTENT_DECODE = {
    16: Config(16, 64, 128, 8, 4, 4),
    32: Config(32, 64, 128, 8, 4, 4),
    64: Config(64, 64, 64, 8, 4, 4),
    128: Config(128, 64, 64, 8, 4, 4),
}
# M > 128, by shape class (shape_class): "short" is at most 4 waves of 128x256 tiles with K <= 4096
# (4096^3: 512 tiles of 64 K steps, where each tile's pipeline fill and epilogue weigh twice what
# they do at K = 8192; 96.5% of cuBLAS in session 3's probe), "large" everything else. Both hold
# the same config until bench/probe_matmul4.py says otherwise; each is one entry to edit.
LARGE = {c: Config(128, 256, 64, 8, 3, 8) for c in ("short", "large")}
PERSISTENT_LARGE = {c: Config(128, 256, 64, 8, 3, 8, 2) for c in ("short", "large")}


def shape_class(m: int, n: int, k: int) -> int | str:
    """The key into DECODE / PERSISTENT_DECODE (M rounded up to a power of two, >= 16) for
    M <= 128, else into LARGE / PERSISTENT_LARGE."""
    if m <= 128:
        return max(16, triton.next_power_of_2(m))
    tiles = triton.cdiv(m, 128) * triton.cdiv(n, 256)
    return "short" if tiles <= 4 * SMS and k <= 4096 else "large"


def launch_config(m: int, n: int, k: int, persistent: bool = False) -> Config:
    """The configuration for a shape class (predictions; bench/probe_matmul.py measures others).

    - Decode-like (M <= 128): the DECODE table above (BM = M rounded up, so no rows are wasted
      on padding); PERSISTENT_DECODE for the persistent kernel, BN = 64.
    - Everything else: LARGE / PERSISTENT_LARGE by shape_class, for now one config in both
      classes: 128 x 256 x 64 tiles, 8 warps (two warpgroups, each a 64 x 256 wgmma), 3 stages:
      3 x 48 KB = 144 KB of shared memory for operands. A 128x256 tile does 2*128*256 FLOPs per
      (128+256)*2 bytes of operands (85 FLOP/B from L2), the highest intensity that fits in one
      SM's 227 KB with 3 stages; GROUP_M = 8 keeps the B panel of 8 tile rows in L2. The
      persistent kernel stores the epilogue in two halves (SUBTILE = 2) so its 32 KB staging
      buffer still fits beside 3 stages.
    """
    cls = shape_class(m, n, k)
    if isinstance(cls, int):
        return PERSISTENT_DECODE[cls] if persistent else DECODE[cls]
    return PERSISTENT_LARGE[cls] if persistent else LARGE[cls]


def _widen(a: torch.Tensor) -> bool:
    """True only under Triton's interpreter with bf16 operands: its tl.dot on bf16 returns
    garbage (bf16 arithmetic is broken there), so the operands are widened to fp32 first (exact:
    every bf16 is an fp32). On a GPU this is always False and the branch compiles away."""
    return os.environ.get("TRITON_INTERPRET") == "1" and a.dtype == torch.bfloat16


def _check_operands(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> tuple[int, int, int]:
    (m, k), (k2, n) = a.shape, b.shape
    assert k == k2 and out.shape == (m, n), "A is M x K, B is K x N, C is M x N"
    assert a.is_contiguous() and b.is_contiguous() and out.is_contiguous()
    return m, n, k


def matmul_tiled(inputs: dict, config: Config | None = None) -> torch.Tensor:
    a, b, out = inputs["a"], inputs["b"], inputs["out"]
    m, n, k = _check_operands(a, b, out)
    cfg = config or launch_config(m, n, k)
    even = m % cfg.bm == 0 and n % cfg.bn == 0 and k % cfg.bk == 0
    tiles = triton.cdiv(m, cfg.bm) * triton.cdiv(n, cfg.bn)
    _matmul_tiled_kernel[(tiles, 1)](
        a, b, out, m, n, k, a.stride(0), b.stride(0), out.stride(0),
        BM=cfg.bm, BN=cfg.bn, BK=cfg.bk, GROUP_M=cfg.group_m, EVEN=even, WIDEN=_widen(a),
        num_stages=cfg.stages, num_warps=cfg.warps,
    )  # fmt: skip
    return out


def _tma_scratch(size: int, alignment: int, stream) -> torch.Tensor:
    # device-side tensor descriptors need a little global memory per program; from torch's
    # caching allocator (inside a CUDA graph capture: the graph's own pool)
    return torch.empty(size, device="cuda", dtype=torch.int8)


def _launch_persistent(a, b, out, cfg: Config, *, widen: bool, **extra) -> torch.Tensor:
    """One persistent launch: one program per SM (or one per tile, when fewer), looping over
    tiles."""
    m, n, k = out.shape[0], out.shape[1], a.shape[1]
    if a.is_cuda:
        triton.set_allocator(_tma_scratch)
    programs = min(SMS, triton.cdiv(m, cfg.bm) * triton.cdiv(n, cfg.bn))
    _matmul_persistent_kernel[(programs,)](
        a, b, out, m, n, k,
        BM=cfg.bm, BN=cfg.bn, BK=cfg.bk, GROUP_M=cfg.group_m, NUM_PROGRAMS=programs,
        SUBTILE=cfg.subtile,
        WS=False,  # identical PTX on sm_90 with Triton 3.6 (module docstring)
        WIDEN=widen, num_stages=cfg.stages, num_warps=cfg.warps, **extra,
    )  # fmt: skip
    return out


def matmul_persistent(inputs: dict, config: Config | None = None) -> torch.Tensor:
    a, b, out = inputs["a"], inputs["b"], inputs["out"]
    m, n, k = _check_operands(a, b, out)
    cfg = config or launch_config(m, n, k, True)
    return _launch_persistent(a, b, out, cfg, widen=_widen(a))


# `profkit tune`: the tiled kernel's tile, pipeline and warps (GROUP_M stays 8)
TUNABLES = {
    "BM": (64, 128),
    "BN": (128, 256),
    "BK": (32, 64),
    "num_stages": (2, 3, 4),
    "num_warps": (4, 8),
}


def configure(params: dict):
    """variant triton at params (TUNABLES' names) instead of launch_config's."""
    cfg = Config(
        params["BM"], params["BN"], params["BK"], 8, params["num_stages"], params["num_warps"]
    )
    return lambda inputs: matmul_tiled(inputs, cfg)


def shipped(shape, dtype: str) -> dict:
    cfg = launch_config(*_mnk(shape))
    return {
        "BM": cfg.bm,
        "BN": cfg.bn,
        "BK": cfg.bk,
        "num_stages": cfg.stages,
        "num_warps": cfg.warps,
    }


def matmul_cublas(inputs: dict) -> torch.Tensor:
    return torch.matmul(inputs["a"], inputs["b"], out=inputs["out"])


def make_inputs(shape, dtype: str, device: str, generator: torch.Generator) -> dict:
    m, n, k = shape
    dt = getattr(torch, dtype)
    # B scaled by 1/sqrt(K): every output is ~N(0, 1) at any K, so one tolerance fits all shapes
    a = torch.randn((m, k), generator=generator, device=device, dtype=torch.float32).to(dt)
    b = (torch.randn((k, n), generator=generator, device=device) * k**-0.5).to(dt)
    return {"a": a, "b": b, "out": torch.empty((m, n), device=device, dtype=dt)}


def reference(inputs: dict) -> torch.Tensor:
    return inputs["a"].double() @ inputs["b"].double()


def _mnk(shape) -> tuple[int, int, int]:
    if len(shape) != 3:  # capture reports it before any work
        raise ValueError("matmul takes MxNxK shapes, e.g. 4096x14336x4096")
    return shape[0], shape[1], shape[2]


def bytes_moved(shape, itemsize: int) -> int:
    m, n, k = _mnk(shape)
    return (m * k + k * n + m * n) * itemsize  # A and B read once, C written once


def flops(shape) -> int:
    m, n, k = _mnk(shape)
    return 2 * m * n * k


SPEC = KernelSpec(
    name="matmul",
    description="C = A @ B (MxNxK: A is MxK, B is KxN), fp32 accumulation, vs cuBLAS",
    variants=(
        Variant(
            "triton",
            matmul_tiled,
            description="tiled tl.dot, one tile per program",
            tunables=TUNABLES,
            configure=configure,
            shipped=shipped,
        ),
        Variant(
            "persistent",
            matmul_persistent,
            description="persistent, one program per SM, TMA tensor descriptors",
        ),
        Variant("cublas", matmul_cublas, baseline=True, description="torch.matmul (cuBLAS)"),
    ),
    make_inputs=make_inputs,
    reference=reference,
    dtypes=("bfloat16", "float16"),
    shapes=(
        (8192, 8192, 8192),
        (4096, 4096, 4096),
        (4096, 14336, 4096),  # MLP up projection, 4096 tokens
        (16384, 4096, 14336),  # MLP down projection, 16384 tokens
        (1024, 8192, 8192),
        (16, 8192, 8192),  # decode-like: bandwidth-bound
        (32, 8192, 8192),
        (64, 8192, 8192),
        (128, 8192, 8192),
    ),
    # outputs ~N(0, 1); fp32 accumulation errs ~1e-6, so output rounding dominates: half an ulp,
    # 2^-9 (bf16) / 2^-12 (fp16) relative, doubled for cuBLAS, which torch lets reduce split-K
    # partials in the input precision (allow_*_reduced_precision_reduction), and for the
    # interpreter's truncating bf16 casts. atol covers outputs near zero at the same scale.
    tolerances={"bfloat16": (2e-2, 2e-2), "float16": (4e-3, 4e-3)},
    bytes_moved=bytes_moved,
    flops=flops,
    interpret_shapes=((64, 64, 64), (48, 80, 96), (16, 128, 64)),
)


# ---- FP8 (e4m3) with per-tensor scales: C = (sa * A8) @ (sb * B8), bf16 out -------------------
#
# A separate entry (matmul_fp8) so the bf16/fp16 sweeps above stay as they were. B is stored
# column-major (B^T, N x K, contiguous): torch._scaled_mm requires it, and Hopper's fp8 wgmma
# reads both operands K-major. Triton 3.6 on sm_90 accumulates fp8 dots without periodic
# promotion to full fp32 (max_num_imprecise_acc = 2^30), which is what _scaled_mm does with
# use_fast_accum=True: that is the like-for-like baseline; use_fast_accum=False is shown too.

FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0


def launch_config_fp8(m: int, n: int, k: int) -> Config:
    """128 x 256 x 128 tiles, 8 warps, 3 stages (a prediction): at 1 byte per element a
    128-wide K step costs what a 64-wide one does in bf16, so the operand stages are the bf16
    kernel's 3 x 48 KB, plus 32 KB for the half-tile epilogue: 176 KB of 227. Per K step the
    tile does twice the bf16 kernel's FLOPs on the same bytes (fp8 wgmma: 2x the bf16 rate)."""
    return Config(128, 256, 128, 8, 3, 8, 2)


def quantize(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-tensor scale so that |x| / scale fits e4m3's range; returns (x8, scale as fp32)."""
    scale = (x.abs().amax().float() / FP8_MAX).clamp(min=1e-12)
    return (x / scale).clamp(-FP8_MAX, FP8_MAX).to(FP8), scale


def make_inputs_fp8(shape, dtype: str, device: str, generator: torch.Generator) -> dict:
    assert dtype == "float8_e4m3fn"
    m, n, k = shape
    a = torch.randn((m, k), generator=generator, device=device)
    bt = torch.randn((n, k), generator=generator, device=device) * k**-0.5  # B^T, as in make_inputs
    a8, sa = quantize(a)
    bt8, sb = quantize(bt)
    out = torch.empty((m, n), device=device, dtype=torch.bfloat16)
    return {"a": a8, "b": bt8.t(), "scale_a": sa, "scale_b": sb, "out": out}


def reference_fp8(inputs: dict) -> torch.Tensor:
    # the dequantized inputs, multiplied in float64: only accumulation and output rounding differ
    a = inputs["a"].double() * inputs["scale_a"].double()
    b = inputs["b"].double() * inputs["scale_b"].double()
    return a @ b


def matmul_fp8_persistent(inputs: dict, config: Config | None = None) -> torch.Tensor:
    a, b, out = inputs["a"], inputs["b"], inputs["out"]
    (m, k), (k2, n) = a.shape, b.shape
    bt = b.t()
    assert k == k2 and a.is_contiguous() and bt.is_contiguous(), "A row-major, B column-major"
    assert a.dtype == FP8 and b.dtype == FP8 and out.dtype == torch.bfloat16
    cfg = config or launch_config_fp8(m, n, k)
    # WIDEN off: the interpreter's fp8 dot is exact (tests/test_matmul_fp8_interpret.py)
    return _launch_persistent(
        a, bt, out, cfg, widen=False, B_KMAJOR=True, SA=inputs["scale_a"], SB=inputs["scale_b"]
    )


def _scaled_mm(inputs: dict, fast_accum: bool) -> torch.Tensor:
    return torch._scaled_mm(
        inputs["a"],
        inputs["b"],
        scale_a=inputs["scale_a"],
        scale_b=inputs["scale_b"],
        out_dtype=torch.bfloat16,
        use_fast_accum=fast_accum,
        out=inputs["out"],
    )


def matmul_fp8_scaled_mm(inputs: dict) -> torch.Tensor:
    return _scaled_mm(inputs, True)


def matmul_fp8_scaled_mm_exact(inputs: dict) -> torch.Tensor:
    return _scaled_mm(inputs, False)


def bytes_moved_fp8(shape, itemsize: int) -> int:
    m, n, k = _mnk(shape)
    return (m * k + k * n) * itemsize + m * n * 2  # fp8 A and B read once, bf16 C written once


SPEC_FP8 = KernelSpec(
    name="matmul_fp8",
    description="C = (sa*A) @ (sb*B), e4m3 in (per-tensor scales), fp32 accumulation, bf16 out",
    variants=(
        Variant(
            "persistent",
            matmul_fp8_persistent,
            description="persistent TMA kernel, fp8 wgmma, scales applied in the epilogue",
        ),
        Variant(
            "scaled_mm",
            matmul_fp8_scaled_mm,
            baseline=True,
            description="torch._scaled_mm, use_fast_accum=True (Triton's sm_90 accumulation)",
        ),
        Variant(
            "scaled_mm_exact",
            matmul_fp8_scaled_mm_exact,
            baseline=True,
            description="torch._scaled_mm, use_fast_accum=False (promoted fp32 accumulation)",
        ),
    ),
    make_inputs=make_inputs_fp8,
    reference=reference_fp8,
    dtypes=("float8_e4m3fn",),
    shapes=((8192, 8192, 8192), (4096, 4096, 4096), (4096, 14336, 4096), (1024, 8192, 8192)),
    # Hopper's fp8 wgmma without promotion keeps ~14 accumulator bits (DeepSeek-V3 report: up to
    # ~2% error at K = 4096), and K = 8192 adds 256 truncating steps: looser than bf16's 2e-2.
    # A dropped scale (a factor amax / 448, ~1e-2) or a wrong tile (errors ~1) still fails.
    tolerances={"float8_e4m3fn": (1e-1, 5e-2)},
    bytes_moved=bytes_moved_fp8,
    flops=flops,
    interpret_shapes=((64, 64, 64), (48, 80, 96), (16, 128, 64)),
)

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
Warp specialization: Triton 3.6 offers it only as tl.range(warp_specialize=True), documented
for Blackwell. Compiled for sm_90 (bench/sm90_compile.py, no GPU needed), the persistent kernel
with WS=True gives byte-identical PTX to WS=False: on the H200 it is the same kernel, so it is not
a variant here (the WS knob stays so the check can be rerun when Triton changes).
"""

from __future__ import annotations

import os

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
    a_ptrs = A + am[:, None] * stride_am + rk[None, :]
    b_ptrs = B + rk[:, None] * stride_bk + bn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
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
):
    # TMA descriptors: bounds are handled by the hardware (out-of-range loads read zeros,
    # out-of-range stores are dropped), so no masks at any shape
    a_desc = tl.make_tensor_descriptor(A, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
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
            b = b_desc.load([ki * BK, pid_n * BN])
            if WIDEN:  # the interpreter only (see _widen)
                a, b = a.to(tl.float32), b.to(tl.float32)
            acc = tl.dot(a, b, acc)
        tile_c += NUM_PROGRAMS
        pid_m, pid_n = _tile_coords(tile_c, num_pid_m, num_pid_n, GROUP_M)
        if SUBTILE == 2:
            # two BM x BN/2 stores: half the shared memory for the epilogue's staging buffer,
            # which the pipeline can spend on stages instead
            halves = tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1))
            c0, c1 = tl.split(halves)
            c_desc.store([pid_m * BM, pid_n * BN], c0.to(C.dtype.element_ty))
            c_desc.store([pid_m * BM, pid_n * BN + BN // 2], c1.to(C.dtype.element_ty))
        else:
            c_desc.store([pid_m * BM, pid_n * BN], acc.to(C.dtype.element_ty))


class Config(tuple):
    """(BM, BN, BK, GROUP_M, num_stages, num_warps, SUBTILE)"""

    __slots__ = ()

    def __new__(cls, bm, bn, bk, group_m, stages, warps, subtile=1):
        return super().__new__(cls, (bm, bn, bk, group_m, stages, warps, subtile))


def launch_config(m: int, n: int, k: int, persistent: bool = False) -> Config:
    """The configuration for a shape class (predictions; bench/matmul_tune.py measures others).

    - Decode-like (M <= 128): the kernel streams B (K x N) once and is bound by DRAM bandwidth,
      not Tensor Cores. BM = M rounded up (16..128) so no rows are wasted on padding; BN = 64 so
      N = 8192 gives 128 programs, one per SM; BK = 128 and 4 stages keep 3 x 16 KB of B per SM
      in flight, about what one SM needs to draw its 1/132 share of 4.2 TB/s at ~1 us latency.
    - Everything else: 128 x 256 x 64 tiles, 8 warps (two warpgroups, each a 64 x 256 wgmma),
      3 stages: 3 x 48 KB = 144 KB of shared memory for operands. A 128x256 tile does
      2*128*256 FLOPs per (128+256)*2 bytes of operands (85 FLOP/B from L2), the highest
      intensity that fits in one SM's 227 KB with 3 stages; GROUP_M = 8 keeps the B panel of 8
      tile rows in L2. The persistent kernel stores the epilogue in two halves (SUBTILE = 2) so
      its 32 KB staging buffer still fits beside 3 stages.
    """
    if m <= 128:
        bm = max(16, triton.next_power_of_2(m))
        return Config(bm, 64, 128 if bm <= 32 else 64, 8, 4, 4, 1)
    return Config(128, 256, 64, 8, 3, 8, 2 if persistent else 1)


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
    bm, bn, bk, group_m, stages, warps, _ = config or launch_config(m, n, k)
    even = m % bm == 0 and n % bn == 0 and k % bk == 0
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    _matmul_tiled_kernel[grid](
        a,
        b,
        out,
        m,
        n,
        k,
        a.stride(0),
        b.stride(0),
        out.stride(0),
        BM=bm,
        BN=bn,
        BK=bk,
        GROUP_M=group_m,
        EVEN=even,
        WIDEN=_widen(a),
        num_stages=stages,
        num_warps=warps,
    )
    return out


def _tma_scratch(size: int, alignment: int, stream) -> torch.Tensor:
    # device-side tensor descriptors need a little global memory per program; from torch's
    # caching allocator (inside a CUDA graph capture: the graph's own pool)
    return torch.empty(size, device="cuda", dtype=torch.int8)


def matmul_persistent(inputs: dict, config: Config | None = None) -> torch.Tensor:
    a, b, out = inputs["a"], inputs["b"], inputs["out"]
    m, n, k = _check_operands(a, b, out)
    bm, bn, bk, group_m, stages, warps, subtile = config or launch_config(m, n, k, True)
    if a.is_cuda:
        triton.set_allocator(_tma_scratch)
    programs = min(SMS, triton.cdiv(m, bm) * triton.cdiv(n, bn))
    _matmul_persistent_kernel[(programs,)](
        a,
        b,
        out,
        m,
        n,
        k,
        BM=bm,
        BN=bn,
        BK=bk,
        GROUP_M=group_m,
        NUM_PROGRAMS=programs,
        SUBTILE=subtile,
        WS=False,  # identical PTX on sm_90 with Triton 3.6 (module docstring)
        WIDEN=_widen(a),
        num_stages=stages,
        num_warps=warps,
    )
    return out


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
        Variant("triton", matmul_tiled, description="tiled tl.dot, one tile per program"),
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
